// The kernels' line transforms, run on the CPU: the register FFT
// (register_fft.cuh) at every power-of-two extent the kernels use, its
// zero-prefix form (the filter transform's lines), and the radix-3 lines of
// 48 and 96 points (radix3_line_fft.cuh), each against a float64 DFT of the
// same float inputs. The same templates run in the kernels; the GPU suite
// (test_gpu_register_fft) checks their device compilation, this one their
// arithmetic on every build, without a GPU.
#include "doctest.hpp"

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <vector>

#include "fftconv/detail/kernels/radix3_line_fft.cuh"
#include "fftconv/detail/kernels/register_fft.cuh"

namespace {

using namespace fftconv::detail;
using line_values = std::vector<std::complex<double>>;

constexpr double pi = 3.14159265358979323846;

// sum_n x[n] exp(-+2 pi i n k / N), in double: the exact transform of the
// float inputs (to ~1e-16).
line_values dft(const std::vector<float2>& x, bool inverse) {
    const int n_points = int(x.size());
    line_values out(x.size());
    const double sign = inverse ? 1.0 : -1.0;
    for (int k = 0; k < n_points; ++k) {
        std::complex<double> sum = 0;
        for (int n = 0; n < n_points; ++n)
            sum += std::complex<double>(x[n].x, x[n].y) *
                   std::polar(1.0, sign * 2 * pi * double((std::int64_t(n) * k) % n_points) / n_points);
        out[k] = sum;
    }
    return out;
}

// Random lines: normal ones and positive ones (uniform [0, 1): a bias in the
// rounding does not cancel there), the points from `live` on zero.
std::vector<float2> random_line(std::mt19937_64& rng, int points, int live, bool positive) {
    std::normal_distribution<float> normal;
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    std::vector<float2> x(points, float2{0.0f, 0.0f});
    for (int n = 0; n < live; ++n)
        x[n] = positive ? float2{uniform(rng), uniform(rng)} : float2{normal(rng), normal(rng)};
    return x;
}

// Relative L2 error of `got` against `exact`, and whether every element is
// within tolerance * (largest exact magnitude): an FP32 FFT's errors scale with
// the line's norm, not with each element.
struct line_error {
    double relative_l2 = 0, worst_element = 0;  // the latter relative to the line's largest value
};
line_error compare(const std::vector<float2>& got, const line_values& exact) {
    double error = 0, norm = 0, largest = 0, worst = 0;
    for (std::size_t k = 0; k < exact.size(); ++k) largest = std::max(largest, std::abs(exact[k]));
    for (std::size_t k = 0; k < exact.size(); ++k) {
        const double e = std::abs(std::complex<double>(got[k].x, got[k].y) - exact[k]);
        error += e * e;
        norm += std::norm(exact[k]);
        worst = std::max(worst, e / largest);
    }
    return {std::sqrt(error / norm), worst};
}

// The bound for an N-point FP32 transform: a radix-2 FFT's relative L2
// error grows as sqrt(log2 N) * 2^-24 (random rounding); 5e-7 is the
// library's end-to-end bar, and a twiddle or index fault gives errors of
// order 1.
constexpr double line_bound = 2.5e-7;

template <int N, bool Inverse>
void check_register_fft() {
    std::mt19937_64 rng(N * 2 + Inverse);
    for (int trial = 0; trial < 64; ++trial) {
        const std::vector<float2> x = random_line(rng, N, N, trial % 2 == 1);
        float2 v[N];
        for (int s = 0; s < N; ++s) v[s] = x[bit_reversed_index<N>(s)];
        fft_in_registers<N, Inverse>(v);
        const line_error e = compare(std::vector<float2>(v, v + N), dft(x, Inverse));
        CHECK_MESSAGE(e.relative_l2 < line_bound, "N = " << N << " inverse " << Inverse << " trial " << trial);
        CHECK(e.worst_element < 4 * line_bound);
    }
}

// The zero-prefix form equals the full transform in every value (the stages
// it replaces by copies add exact zeros), so it is as accurate.
template <int N, bool Inverse, int ZeroStages>
void check_prefix_fft() {
    std::mt19937_64 rng(N * 16 + ZeroStages * 2 + Inverse);
    int differing = 0;
    for (int trial = 0; trial < 64; ++trial) {
        const std::vector<float2> x = random_line(rng, N, N >> ZeroStages, trial % 2 == 1);
        float2 full[N], prefix[N];
        for (int s = 0; s < N; ++s) {
            full[s] = x[bit_reversed_index<N>(s)];
            prefix[s] = s % (1 << ZeroStages) == 0 ? full[s] : float2{12345.0f, -6789.0f};  // never read
        }
        fft_in_registers<N, Inverse>(full);
        fft_in_registers_of_prefix<N, Inverse, ZeroStages>(prefix);
        for (int k = 0; k < N; ++k) differing += full[k].x != prefix[k].x || full[k].y != prefix[k].y;
        const line_error e = compare(std::vector<float2>(prefix, prefix + N), dft(x, Inverse));
        CHECK(e.relative_l2 < line_bound);
    }
    CHECK_MESSAGE(differing == 0, "N = " << N << ", " << ZeroStages << " zero stages");
}

// A radix-3 line of T points at `Stride` (a row: 1; a column of a tile in
// shared memory: T + 1), transformed the way the depthwise kernel does it
// with one thread a line: the three subsequence FFTs, then the radix-3 step
// over every k. Forward leaves frequency f in slot_of_frequency(f); inverse
// reads that order and leaves natural order.
template <int T, bool Inverse, int Stride>
void radix3_line(std::vector<float2>& strided) {
    for (int r = 0; r < 3; ++r)
        if (!Inverse) radix3_subsequence_fft<T, false, Stride>(strided.data(), r);
    radix3_step<T, Inverse, Stride>(strided.data(), 0, T / 3);
    if (Inverse)
        for (int r = 0; r < 3; ++r) radix3_subsequence_fft<T, true, Stride>(strided.data(), r);
}

template <int T, int Stride>
void check_radix3_line() {
    std::mt19937_64 rng(T * 8 + Stride);
    for (int trial = 0; trial < 32; ++trial) {
        // Forward: natural order in, digit-reversed out.
        const std::vector<float2> x = random_line(rng, T, T, trial % 2 == 1);
        std::vector<float2> line(std::size_t(T) * Stride, float2{0.0f, 0.0f});
        for (int n = 0; n < T; ++n) line[std::size_t(n) * Stride] = x[n];
        radix3_line<T, false, Stride>(line);
        std::vector<float2> spectrum(T);
        for (int f = 0; f < T; ++f) spectrum[f] = line[std::size_t(slot_of_frequency(f, T)) * Stride];
        const line_error forward = compare(spectrum, dft(x, false));
        CHECK_MESSAGE(forward.relative_l2 < line_bound, "T = " << T << " forward, trial " << trial);
        CHECK(forward.worst_element < 4 * line_bound);

        // Inverse: a spectrum in digit-reversed order in, natural order out.
        const std::vector<float2> y = random_line(rng, T, T, trial % 2 == 0);
        for (int f = 0; f < T; ++f) line[std::size_t(slot_of_frequency(f, T)) * Stride] = y[f];
        radix3_line<T, true, Stride>(line);
        std::vector<float2> values(T);
        for (int n = 0; n < T; ++n) values[n] = line[std::size_t(n) * Stride];
        const line_error inverse = compare(values, dft(y, true));
        CHECK_MESSAGE(inverse.relative_l2 < line_bound, "T = " << T << " inverse, trial " << trial);
        CHECK(inverse.worst_element < 4 * line_bound);
    }
}

// The radix-3 step split among three threads (T = 96: radix3_share) covers
// every k once.
template <int T, int Threads>
void check_radix3_shares() {
    std::vector<int> covered(T / 3, 0);
    for (int part = 0; part < Threads; ++part) {
        int first = 0, last = 0;
        radix3_share<T, Threads>(part, first, last);
        for (int k = first; k < last; ++k) ++covered[k];
    }
    for (int k = 0; k < T / 3; ++k) CHECK_MESSAGE(covered[k] == 1, "T = " << T << ", k = " << k);
}

}  // namespace

TEST_CASE("register FFTs match a float64 DFT at every extent the kernels use") {
    check_register_fft<2, false>();
    check_register_fft<4, false>();
    check_register_fft<8, false>();
    check_register_fft<16, false>();
    check_register_fft<16, true>();
    check_register_fft<32, false>();
    check_register_fft<32, true>();
    check_register_fft<64, false>();
    check_register_fft<64, true>();
}

TEST_CASE("a zero-prefix register FFT is the full transform, value for value") {
    check_prefix_fft<16, false, 1>();
    check_prefix_fft<16, false, 3>();
    check_prefix_fft<32, false, 2>();
    check_prefix_fft<32, true, 2>();
    check_prefix_fft<64, false, 1>();
    check_prefix_fft<64, false, 2>();
    check_prefix_fft<64, false, 3>();
    check_prefix_fft<64, true, 3>();
}

TEST_CASE("radix-3 lines of 48 and 96 points, rows and columns, match a float64 DFT") {
    check_radix3_line<48, 1>();
    check_radix3_line<48, 49>();
    check_radix3_line<96, 1>();
    check_radix3_line<96, 97>();
}

TEST_CASE("the radix-3 step's shares cover each butterfly once") {
    check_radix3_shares<48, 1>();
    check_radix3_shares<96, 3>();
}
