// The register FFT of a zero-padded line (register_fft.cuh,
// fft_in_registers_of_prefix: the filter transform's lines) against the full
// register FFT of the same line, element for element (adding exact zeros
// changes nothing, so the two agree to the bit but for the sign of a zero),
// and both against a float64 DFT, for every tile extent and zero-stage count
// the filter transform uses, forward and inverse, as the device compiles
// them (the host suite's test_line_transforms runs the same templates on the
// CPU).
#include "doctest.hpp"

#include <cmath>
#include <complex>
#include <cstdio>
#include <random>
#include <vector>

#include <cuda_runtime_api.h>

#include "fftconv/detail/kernels/register_fft.cuh"
#include "fftconv/detail/runtime/check.hpp"

namespace {

using namespace fftconv::detail;

// Line `line` of `in` (N points in natural order, zero from N >> Z on)
// through both transforms: full[line], prefix[line], natural order out.
template <int N, int Z, bool Inverse>
__global__ void both_transforms(const float2* in, float2* full, float2* prefix, int lines) {
    const int line = int(blockIdx.x * blockDim.x + threadIdx.x);
    if (line >= lines) return;
    const float2* x = in + line * N;
    float2 a[N], b[N];
#pragma unroll
    for (int s = 0; s < N; ++s) a[s] = x[bit_reversed<N>.index[s]];
#pragma unroll
    for (int s = 0; s < N; s += 1 << Z) b[s] = x[bit_reversed<N>.index[s]];
    fft_in_registers<N, Inverse>(a);
    fft_in_registers_of_prefix<N, Inverse, Z>(b);
#pragma unroll
    for (int k = 0; k < N; ++k) {
        full[line * N + k] = a[k];
        prefix[line * N + k] = b[k];
    }
}

template <int N, int Z, bool Inverse>
void check_prefix_transform() {
    constexpr int lines = 256, points = N >> Z;
    std::mt19937_64 rng(std::uint64_t(N) * 131 + Z * 7 + Inverse);
    std::normal_distribution<float> normal;
    std::vector<float2> host(std::size_t(lines) * N, float2{0.0f, 0.0f});
    for (int line = 0; line < lines; ++line)
        for (int n = 0; n < points; ++n)  // half the lines positive: no cancellation to hide an error
            host[std::size_t(line) * N + n] =
                line % 2 ? float2{normal(rng), normal(rng)} : float2{std::abs(normal(rng)), std::abs(normal(rng))};
    float2 *in = nullptr, *full = nullptr, *prefix = nullptr;
    const std::size_t bytes = sizeof(float2) * host.size();
    FFTCONV_CUDA_TRY(cudaMalloc(&in, bytes));
    FFTCONV_CUDA_TRY(cudaMalloc(&full, bytes));
    FFTCONV_CUDA_TRY(cudaMalloc(&prefix, bytes));
    FFTCONV_CUDA_TRY(cudaMemcpy(in, host.data(), bytes, cudaMemcpyHostToDevice));
    both_transforms<N, Z, Inverse><<<lines / 64, 64>>>(in, full, prefix, lines);
    FFTCONV_CUDA_TRY(cudaGetLastError());
    std::vector<float2> a(host.size()), b(host.size());
    FFTCONV_CUDA_TRY(cudaMemcpy(a.data(), full, bytes, cudaMemcpyDeviceToHost));
    FFTCONV_CUDA_TRY(cudaMemcpy(b.data(), prefix, bytes, cudaMemcpyDeviceToHost));
    cudaFree(in);
    cudaFree(full);
    cudaFree(prefix);

    int differing = 0;
    double error = 0, norm = 0;
    const double pi = 3.14159265358979323846, sign = Inverse ? 1.0 : -1.0;
    for (int line = 0; line < lines; ++line)
        for (int k = 0; k < N; ++k) {
            const std::size_t at = std::size_t(line) * N + k;
            if (a[at].x != b[at].x || a[at].y != b[at].y) ++differing;  // +0 == -0
            std::complex<double> exact = 0;
            for (int n = 0; n < points; ++n) {
                const float2 v = host[std::size_t(line) * N + n];
                exact += std::complex<double>(v.x, v.y) * std::polar(1.0, sign * 2 * pi * double(n) * k / N);
            }
            error += std::norm(std::complex<double>(b[at].x, b[at].y) - exact);
            norm += std::norm(exact);
        }
    const double relative_l2 = std::sqrt(error / norm);
    CAPTURE(N);
    CAPTURE(Z);
    CAPTURE(Inverse);
    CHECK(differing == 0);
    CHECK(relative_l2 < 5e-7);  // the project's bar
    std::printf("N=%d zero stages %d %s: %d of %d values differ from the full transform, rel_l2 %.3g\n", N, Z,
                Inverse ? "inverse" : "forward", differing, lines * N, relative_l2);
}

template <int N, bool Inverse>
void check_every_zero_stage_count() {
    check_prefix_transform<N, 0, Inverse>();
    check_prefix_transform<N, 1, Inverse>();
    check_prefix_transform<N, 2, Inverse>();
    check_prefix_transform<N, 3, Inverse>();
}

}  // namespace

TEST_CASE("a zero-padded line's register FFT is the full register FFT, and near a float64 DFT") {
    check_every_zero_stage_count<16, false>();
    check_every_zero_stage_count<32, false>();
    check_every_zero_stage_count<64, false>();
    check_every_zero_stage_count<64, true>();
}
