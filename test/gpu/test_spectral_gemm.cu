// Both split-TF32 spectral GEMM kernels — the mma.sync one (detail/kernels/spectral_gemm.cuh,
// spectral_gemm_warp_level) and the wgmma one that spectral_gemm runs on an sm_90
// device (warpgroup_spectral_gemm.hpp) — against an exact
// float64 product of the same per-bin complex GEMM, and against cuBLAS's FP32
// CGEMM on the same data: it must be at least as accurate as cuBLAS (or within
// 3e-7 relative L2, where cuBLAS is near exact because K is tiny), on
// random-normal data and on positive uniform [0,1) data (the one that shows a
// truncating accumulation: every product is positive, so a one-signed error
// adds up instead of cancelling). Shapes are awkward on purpose: rows 1..225,
// channels 1..128, output-channel ranges that start and end off any block
// edge, odd and padded bin strides, a base pointer off 16-byte alignment.
// Every output element outside the computed range must be left untouched.
// The compile-time channel counts (spectral_gemm_static<C>) must give the
// library's dynamic spectral_gemm bit for bit.
#include "doctest.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/kernels/spectral_gemm.cuh"
#include "fftconv/detail/kernels/spectral_gemm.hpp"
#include "fftconv/detail/kernels/warpgroup_spectral_gemm.hpp"
#include "fftconv/status.hpp"

namespace {

using fftconv::detail::spectral_gemm_args;

template <class T>
struct device_buffer {
    T* data = nullptr;
    explicit device_buffer(std::size_t count) { FFTCONV_CUDA_TRY(cudaMalloc(&data, sizeof(T) * std::max<std::size_t>(count, 1))); }
    ~device_buffer() { cudaFree(data); }
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
};

struct gemm_case {
    std::int64_t rows, in_channels, out_channels, first_out, last_out, bins;
    std::int64_t stride_pad;  // extra elements per bin (odd: odd bin strides, 8-byte copies)
    std::int64_t base_offset; // elements the three base pointers are moved by (1: off 16-byte alignment)
};

struct error_stats {
    double relative_l2 = 0;
    double worst_bound_fraction = 0;  // max over elements of |error| / (1e-6 * sum_c |x_c| |w_c|)
    std::int64_t untouched_changed = 0;
    std::int64_t non_finite = 0;
};

constexpr float sentinel = -1234.5f;

// Exact product (float64) and the per-element magnitude sum_c |x||w|, which
// bounds any FP32-class rounding error of the element.
void reference(const gemm_case& g, const spectral_gemm_args& layout, const std::vector<std::complex<float>>& x,
               const std::vector<std::complex<float>>& w, std::vector<std::complex<double>>& exact,
               std::vector<double>& magnitude) {
    exact.assign(std::size_t(g.bins * g.out_channels * g.rows), 0.0);
    magnitude.assign(exact.size(), 0.0);
    for (std::int64_t f = 0; f < g.bins; ++f)
        for (std::int64_t o = g.first_out; o < g.last_out; ++o)
            for (std::int64_t m = 0; m < g.rows; ++m) {
                std::complex<double> sum = 0;
                double abs_sum = 0;
                for (std::int64_t c = 0; c < g.in_channels; ++c) {
                    const std::complex<double> xv = x[f * layout.input_bin_stride + c * g.rows + m];
                    const std::complex<double> wv = w[f * layout.filter_bin_stride + c * g.out_channels + o];
                    sum += xv * std::conj(wv);
                    abs_sum += std::abs(xv) * std::abs(wv);
                }
                const std::size_t i = std::size_t((f * g.out_channels + o) * g.rows + m);
                exact[i] = sum;
                magnitude[i] = abs_sum;
            }
}

error_stats compare(const gemm_case& g, const spectral_gemm_args& layout, const std::vector<std::complex<float>>& y,
                    const std::vector<std::complex<double>>& exact, const std::vector<double>& magnitude) {
    error_stats s;
    double error_sq = 0, exact_sq = 0;
    for (std::int64_t f = 0; f < g.bins; ++f)
        for (std::int64_t within = 0; within < layout.output_bin_stride; ++within) {
            const std::complex<float> value = y[f * layout.output_bin_stride + within];
            const std::int64_t o = within / g.rows, m = within % g.rows;
            const bool computed = o < g.out_channels && o >= g.first_out && o < g.last_out;
            if (!computed) {
                if (value != std::complex<float>(sentinel, sentinel)) ++s.untouched_changed;
                continue;
            }
            if (!std::isfinite(value.real()) || !std::isfinite(value.imag())) {
                ++s.non_finite;
                continue;
            }
            const std::size_t i = std::size_t((f * g.out_channels + o) * g.rows + m);
            const double error = std::abs(std::complex<double>(value) - exact[i]);
            error_sq += error * error;
            exact_sq += std::norm(exact[i]);
            if (magnitude[i] > 0)
                s.worst_bound_fraction = std::max(s.worst_bound_fraction, error / (1e-6 * magnitude[i]));
            else if (error > 0)
                s.worst_bound_fraction = INFINITY;
        }
    s.relative_l2 = exact_sq > 0 ? std::sqrt(error_sq / exact_sq) : std::sqrt(error_sq);
    return s;
}

void cublas_fp32(cublasHandle_t blas, const spectral_gemm_args& a, cudaStream_t stream) {
    // multiply_spectra (src/pipeline/spectral_product.cu) before this kernel: FP32 (no TF32) CGEMM.
    const cuComplex one{1.0f, 0.0f}, zero{0.0f, 0.0f};
    FFTCONV_CUBLAS_TRY(cublasSetStream(blas, stream));
    FFTCONV_CUBLAS_TRY(cublasCgemmStridedBatched(
        blas, CUBLAS_OP_N, CUBLAS_OP_C, int(a.rows), int(a.last_out - a.first_out), int(a.in_channels), &one,
        reinterpret_cast<const cuComplex*>(a.input), int(a.rows), a.input_bin_stride,
        reinterpret_cast<const cuComplex*>(a.filter) + a.first_out, int(a.out_channels), a.filter_bin_stride, &zero,
        reinterpret_cast<cuComplex*>(a.output) + a.first_out * a.rows, int(a.rows), a.output_bin_stride,
        int(a.bins)));
}

// One case's data on the host and the device, its float64 reference, and a
// way to run a GEMM on it from a poisoned output.
struct prepared_case {
    gemm_case g;
    bool positive;
    spectral_gemm_args a{};
    std::vector<std::complex<float>> x, w, poison;
    device_buffer<std::complex<float>> x_device, w_device, y_device;
    std::vector<std::complex<double>> exact;
    std::vector<double> magnitude;

    static spectral_gemm_args layout_of(const gemm_case& g) {
        spectral_gemm_args a{};
        a.rows = g.rows;
        a.in_channels = g.in_channels;
        a.out_channels = g.out_channels;
        a.first_out = g.first_out;
        a.last_out = g.last_out;
        a.bins = g.bins;
        a.input_bin_stride = g.in_channels * g.rows + g.stride_pad;
        a.filter_bin_stride = g.in_channels * g.out_channels + g.stride_pad;
        a.output_bin_stride = g.out_channels * g.rows + g.stride_pad;
        return a;
    }
    std::size_t input_count() const { return std::size_t(g.bins * a.input_bin_stride); }
    std::size_t filter_count() const { return std::size_t(g.bins * a.filter_bin_stride); }
    std::size_t output_count() const { return std::size_t(g.bins * a.output_bin_stride); }

    prepared_case(const gemm_case& g_, bool positive_, std::uint64_t seed)
        : g(g_), positive(positive_), a(layout_of(g_)), x(input_count()), w(filter_count()),
          poison(output_count(), {sentinel, sentinel}), x_device(input_count() + g.base_offset),
          w_device(filter_count() + g.base_offset), y_device(output_count() + g.base_offset) {
        std::mt19937_64 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
        auto draw = [&] { return positive ? uniform(rng) : normal(rng); };
        for (auto& v : x) v = {draw(), draw()};
        for (auto& v : w) v = {draw(), draw()};
        FFTCONV_CUDA_TRY(cudaMemcpy(x_device.data + g.base_offset, x.data(), x.size() * 8, cudaMemcpyHostToDevice));
        FFTCONV_CUDA_TRY(cudaMemcpy(w_device.data + g.base_offset, w.data(), w.size() * 8, cudaMemcpyHostToDevice));
        // A cudaMemcpy from pageable memory may return before its DMA lands,
        // and the GEMMs run on a non-blocking stream that does not wait for
        // it: without this, a loaded GPU let a GEMM read half-copied inputs.
        FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
        a.input = reinterpret_cast<const float2*>(x_device.data + g.base_offset);
        a.filter = reinterpret_cast<const float2*>(w_device.data + g.base_offset);
        a.output = reinterpret_cast<float2*>(y_device.data + g.base_offset);
        reference(g, a, x, w, exact, magnitude);
    }

    // The whole output buffer (computed range and untouched elements) after
    // `run` on a poisoned output.
    template <class Run>
    std::vector<std::complex<float>> produce(Run&& run, cudaStream_t stream) {
        FFTCONV_CUDA_TRY(cudaMemcpy(y_device.data + g.base_offset, poison.data(), poison.size() * 8,
                                    cudaMemcpyHostToDevice));
        FFTCONV_CUDA_TRY(cudaDeviceSynchronize());  // the poison lands before the GEMM writes (see above)
        run();
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
        std::vector<std::complex<float>> y(poison.size());
        FFTCONV_CUDA_TRY(cudaMemcpy(y.data(), y_device.data + g.base_offset, y.size() * 8, cudaMemcpyDeviceToHost));
        return y;
    }
    error_stats stats(const std::vector<std::complex<float>>& y) const { return compare(g, a, y, exact, magnitude); }
};

// The float64 checks of one output of ours, against cuBLAS's on the same data.
void check_against_float64(const prepared_case& p, const error_stats& ours, const error_stats& blas_stats,
                           const char* what) {
    const gemm_case& g = p.g;
    INFO(what, " rows=", g.rows, " in=", g.in_channels, " out=", g.out_channels, " range=[", g.first_out, ",",
         g.last_out, ") bins=", g.bins, " pad=", g.stride_pad, " offset=", g.base_offset,
         p.positive ? " positive" : " normal", " rel_l2=", ours.relative_l2, " (cuBLAS ", blas_stats.relative_l2,
         ") worst/bound=", ours.worst_bound_fraction, " (cuBLAS ", blas_stats.worst_bound_fraction, ")");
    std::printf("%s rows=%-3lld in=%-3lld out=%-3lld [%lld,%lld) %s: rel_l2 %.3g (cuBLAS %.3g), "
                "worst |err|/(1e-6 sum|x||w|) %.3g (cuBLAS %.3g)\n",
                what, (long long)g.rows, (long long)g.in_channels, (long long)g.out_channels,
                (long long)g.first_out, (long long)g.last_out, p.positive ? "positive" : "normal  ",
                ours.relative_l2, blas_stats.relative_l2, ours.worst_bound_fraction, blas_stats.worst_bound_fraction);
    CHECK(ours.untouched_changed == 0);
    CHECK(ours.non_finite == 0);
    CHECK(ours.relative_l2 <= std::max(blas_stats.relative_l2, 3e-7));
    // |error| <= 1e-6 * sum_c |x_c||w_c|: a per-element bound that FP32-class
    // arithmetic meets with room (2^-21 per split product plus FP32 adds),
    // and that a wrong element, a lost k-step or a product added twice breaks.
    CHECK(ours.worst_bound_fraction <= 1.0);
}

// The kernel spectral_gemm runs on this device, by name.
const char* default_kernel(const spectral_gemm_args& a) {
    return fftconv::detail::warpgroup_spectral_gemm_runs(a) ? "wgmma" : "mma.sync";
}

void run_case(const gemm_case& g, bool positive, std::uint64_t seed, cublasHandle_t blas, cudaStream_t stream) {
    prepared_case p(g, positive, seed);
    const error_stats blas_stats = p.stats(p.produce([&] { cublas_fp32(blas, p.a, stream); }, stream));
    const error_stats ours = p.stats(p.produce([&] { fftconv::detail::spectral_gemm(p.a, stream); }, stream));
    check_against_float64(p, ours, blas_stats, default_kernel(p.a));
    if (fftconv::detail::warpgroup_spectral_gemm_runs(p.a)) {
        const error_stats warp = p.stats(
            p.produce([&] { fftconv::detail::spectral_gemm_warp_level<0>(p.a, stream); }, stream));
        check_against_float64(p, warp, blas_stats, "mma.sync");
    }
}

// spectral_gemm_static<C> (or, warp_level, spectral_gemm_warp_level<C>) for
// the channel counts it is instantiated for here.
void run_static(const spectral_gemm_args& a, cudaStream_t stream, bool warp_level) {
    using namespace fftconv::detail;
    switch (a.in_channels) {
        case 17: return warp_level ? spectral_gemm_warp_level<17>(a, stream) : spectral_gemm_static<17>(a, stream);
        case 64: return warp_level ? spectral_gemm_warp_level<64>(a, stream) : spectral_gemm_static<64>(a, stream);
        case 128: return warp_level ? spectral_gemm_warp_level<128>(a, stream) : spectral_gemm_static<128>(a, stream);
        default: FAIL("no static instantiation for in_channels = ", a.in_channels);
    }
}

// The static instantiation against the library's dynamic one on the same
// data: the same bytes everywhere in the output buffer (computed range and
// untouched elements), and the float64 checks on the static output.
void run_static_case(const gemm_case& g, bool positive, std::uint64_t seed, cublasHandle_t blas,
                     cudaStream_t stream) {
    prepared_case p(g, positive, seed);
    const error_stats blas_stats = p.stats(p.produce([&] { cublas_fp32(blas, p.a, stream); }, stream));
    for (const bool warp_level : {false, true}) {
        const auto dynamic_y = p.produce(
            [&] {
                if (warp_level) fftconv::detail::spectral_gemm_warp_level<0>(p.a, stream);
                else fftconv::detail::spectral_gemm(p.a, stream);
            },
            stream);
        const auto static_y = p.produce([&] { run_static(p.a, stream, warp_level); }, stream);
        std::int64_t differing = 0;
        for (std::size_t i = 0; i < dynamic_y.size(); ++i)
            if (std::memcmp(&dynamic_y[i], &static_y[i], sizeof dynamic_y[i]) != 0) ++differing;
        INFO("rows=", g.rows, " in=", g.in_channels, " out=", g.out_channels, " range=[", g.first_out, ",",
             g.last_out, ") bins=", g.bins, " pad=", g.stride_pad, " offset=", g.base_offset,
             positive ? " positive" : " normal", warp_level ? " mma.sync" : " default");
        CHECK(differing == 0);
        check_against_float64(p, p.stats(static_y), blas_stats,
                              warp_level ? "spectral_gemm_warp_level<C>" : "spectral_gemm_static<C>");
    }
}

}  // namespace

TEST_CASE("spectral_gemm matches float64 at least as well as cuBLAS FP32, on awkward shapes") {
    cudaStream_t stream = nullptr;
    FFTCONV_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t blas = nullptr;
    FFTCONV_CUBLAS_TRY(cublasCreate(&blas));
    FFTCONV_CUBLAS_TRY(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));

    // rows, in, out, [first, last), bins, stride pad, base offset. The input
    // copy path each case takes (spectral_gemm.cu): 16-byte pairs when rows
    // and the bin stride are even, shifted pairs when rows are odd and the
    // bin stride even, 8-byte elements when the bin stride is odd or the base
    // is off 16-byte alignment.
    const gemm_case cases[] = {
        {1, 1, 1, 0, 1, 3, 0, 0},            // the smallest product (elements)
        {7, 3, 17, 0, 17, 4, 1, 0},          // odd everything (shifted)
        {50, 64, 64, 0, 64, 5, 2, 0},        // a leaderboard-like shape (pairs)
        {50, 64, 64, 0, 32, 3, 2, 0},        // first output half ...
        {50, 64, 64, 32, 64, 3, 2, 0},       // ... second half
        {49, 128, 128, 0, 64, 3, 4, 0},      // odd rows, halves of 128 (shifted)
        {49, 128, 128, 64, 128, 3, 2, 0},
        {49, 128, 128, 0, 128, 2, 1, 0},     // odd rows, odd bin stride (elements)
        {33, 64, 40, 0, 40, 3, 0, 0},        // odd rows, a partial channel block (shifted)
        {225, 17, 3, 0, 3, 3, 0, 0},         // many rows, few channels (elements)
        {225, 3, 128, 5, 101, 2, 1, 0},      // odd first channel, range off every block edge (shifted)
        {100, 64, 64, 0, 64, 4, 4, 1},       // base pointers off 16-byte alignment (elements)
        {196, 64, 64, 31, 64, 2, 2, 0},      // odd start, 33 channels (8-byte filter copies)
        {1, 128, 128, 0, 128, 2, 0, 0},      // one row (shifted)
        {7, 128, 3, 1, 2, 3, 1, 0},          // one output channel in the middle
        {50, 300, 17, 0, 17, 2, 1, 0},       // K beyond the largest block multiple, odd
        {120, 17, 64, 0, 64, 3, 4, 0},
        // wgmma row blocks of every width: 8, 16, 24, 40, 64, two of 40 (65), two of 56 (104)
        {8, 32, 64, 0, 64, 3, 0, 0},
        {16, 48, 96, 0, 96, 2, 1, 0},
        {24, 40, 64, 0, 64, 3, 0, 1},
        {40, 64, 128, 0, 128, 2, 0, 0},
        {64, 128, 64, 0, 64, 2, 2, 0},
        {65, 33, 70, 3, 70, 2, 0, 0},
        {104, 64, 64, 0, 64, 3, 0, 0},
    };
    std::uint64_t seed = 20261130;
    for (const gemm_case& g : cases)
        for (const bool positive : {false, true}) run_case(g, positive, ++seed, blas, stream);

    FFTCONV_CUBLAS_TRY(cublasDestroy(blas));
    FFTCONV_CUDA_TRY(cudaStreamDestroy(stream));
}

TEST_CASE("spectral_gemm_static<17>, <64> and <128> give the dynamic spectral_gemm bit for bit") {
    cudaStream_t stream = nullptr;
    FFTCONV_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    cublasHandle_t blas = nullptr;
    FFTCONV_CUBLAS_TRY(cublasCreate(&blas));
    FFTCONV_CUBLAS_TRY(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));

    // rows, in, out, [first, last), bins, stride pad, base offset: every
    // input copy path, both filter copy widths, 1..7 n-tiles per warp,
    // full ranges, halves and ranges off the block edges.
    const gemm_case cases[] = {
        {50, 64, 64, 0, 64, 3, 2, 0},        // pairs, full range
        {50, 64, 64, 0, 32, 3, 2, 0},        // halves
        {50, 64, 64, 32, 64, 3, 2, 0},
        {33, 64, 40, 0, 40, 3, 0, 0},        // shifted, a partial channel block
        {100, 64, 64, 0, 64, 2, 4, 1},       // off 16-byte alignment (elements)
        {196, 64, 64, 31, 64, 2, 2, 0},      // odd start (8-byte filter copies)
        {1, 64, 17, 3, 14, 3, 1, 0},         // one row, odd bin stride
        {225, 64, 128, 5, 101, 2, 1, 0},     // many rows, range off every block edge
        {49, 128, 128, 0, 64, 3, 4, 0},      // odd rows, halves of 128 (shifted)
        {49, 128, 128, 64, 128, 3, 2, 0},
        {49, 128, 128, 0, 128, 2, 1, 0},     // odd bin stride (elements)
        {50, 128, 128, 0, 128, 3, 0, 0},     // pairs, full range
        {1, 128, 128, 0, 128, 2, 0, 0},      // one row
        {7, 128, 3, 1, 2, 3, 1, 0},          // one output channel in the middle
        {100, 128, 64, 0, 64, 2, 0, 1},      // off 16-byte alignment
        {64, 17, 64, 0, 64, 3, 0, 0},        // a partial last k-tile: its second k-step skipped
    };
    std::uint64_t seed = 20270101;
    for (const gemm_case& g : cases)
        for (const bool positive : {false, true}) run_static_case(g, positive, ++seed, blas, stream);

    FFTCONV_CUBLAS_TRY(cublasDestroy(blas));
    FFTCONV_CUDA_TRY(cudaStreamDestroy(stream));
}

TEST_CASE("spectral_gemm rejects arguments out of range and does nothing for an empty range") {
    spectral_gemm_args a{};
    a.rows = 4;
    a.in_channels = 2;
    a.out_channels = 3;
    a.first_out = 0;
    a.last_out = 4;  // beyond out_channels
    a.bins = 1;
    a.input_bin_stride = 8;
    a.filter_bin_stride = 6;
    a.output_bin_stride = 12;
    CHECK_THROWS_AS(fftconv::detail::spectral_gemm(a, nullptr), fftconv::error);
    a.last_out = 3;
    a.filter_bin_stride = 5;  // smaller than one bin's matrix
    CHECK_THROWS_AS(fftconv::detail::spectral_gemm(a, nullptr), fftconv::error);
    a.filter_bin_stride = 6;
    a.first_out = a.last_out = 2;  // nothing to compute: no launch, no access
    CHECK_NOTHROW(fftconv::detail::spectral_gemm(a, nullptr));
    // A static instantiation refuses another channel count, before anything else.
    CHECK_THROWS_AS(fftconv::detail::spectral_gemm_static<64>(a, nullptr), fftconv::error);
    a.in_channels = 64;
    a.input_bin_stride = 256;
    a.filter_bin_stride = 192;
    CHECK_NOTHROW(fftconv::detail::spectral_gemm_static<64>(a, nullptr));
    a.first_out = 0;
    a.last_out = 4;  // beyond out_channels
    CHECK_THROWS_AS(fftconv::detail::spectral_gemm_static<64>(a, nullptr), fftconv::error);
}

// A non-finite value in the input (bin f, channel c, row m) must reach every
// output (f, o, m), and one in the filter (f, c, o) every output (f, o, m'),
// and nothing else. The GPU's arithmetic NaN is 0x7fffffff: rounding it to
// TF32 by an integer add carried into the sign bit and left -0, so the
// product ignored it (a NaN in x gave finite outputs). (A negative NaN is not
// among the patterns: arithmetic never produces one, and the spectra are
// arithmetic results.)
TEST_CASE("spectral_gemm carries a NaN or Inf of either operand into the outputs it feeds") {
    const gemm_case g{50, 64, 64, 0, 64, 3, 0, 0};
    const std::uint32_t patterns[] = {0x7fffffffu, 0x7fc00000u, 0x7f800000u, 0xff800000u};
    for (const std::uint32_t pattern : patterns) {
        float bad;
        std::memcpy(&bad, &pattern, sizeof bad);
        for (const bool in_filter : {false, true}) {
            CAPTURE(pattern);
            CAPTURE(in_filter);
            prepared_case p(g, false, 77);
            const std::int64_t f = 1, c = 37, m = 21, o = 45;
            std::vector<std::complex<float>>& operand = in_filter ? p.w : p.x;
            const std::int64_t at = in_filter ? f * p.a.filter_bin_stride + c * g.out_channels + o
                                              : f * p.a.input_bin_stride + c * g.rows + m;
            operand[std::size_t(at)] = {bad, 0.5f};
            auto* device = in_filter ? p.w_device.data : p.x_device.data;
            FFTCONV_CUDA_TRY(cudaMemcpy(device, operand.data(), operand.size() * 8, cudaMemcpyHostToDevice));
            for (const bool warp_level : {false, true}) {
                CAPTURE(warp_level);
                const auto y = p.produce(
                    [&] {
                        if (warp_level) fftconv::detail::spectral_gemm_warp_level<0>(p.a, nullptr);
                        else fftconv::detail::spectral_gemm(p.a, nullptr);
                    },
                    nullptr);
                std::int64_t wrong = 0;
                for (std::int64_t bin = 0; bin < g.bins; ++bin)
                    for (std::int64_t out = 0; out < g.out_channels; ++out)
                        for (std::int64_t row = 0; row < g.rows; ++row) {
                            const std::complex<float> v = y[std::size_t(bin * p.a.output_bin_stride + out * g.rows + row)];
                            const bool finite = std::isfinite(v.real()) && std::isfinite(v.imag());
                            const bool fed = bin == f && (in_filter ? out == o : row == m);
                            wrong += finite == fed;
                        }
                CHECK(wrong == 0);
            }
        }
    }
}

// On a compute capability 9.0 device (the H200 the project measures on)
// spectral_gemm must run the wgmma kernel, or the checks above would test
// the mma.sync kernel twice.
TEST_CASE("spectral_gemm runs the wgmma kernel on an sm_90 device and only there") {
    int device = 0, major = 0, minor = 0;
    FFTCONV_CUDA_TRY(cudaGetDevice(&device));
    FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    const spectral_gemm_args a = prepared_case::layout_of({50, 128, 128, 0, 64, 2112, 0, 0});
    CAPTURE(major);
    CAPTURE(minor);
    CHECK(fftconv::detail::warpgroup_spectral_gemm_runs(a) == (major == 9 && minor == 0));
}
