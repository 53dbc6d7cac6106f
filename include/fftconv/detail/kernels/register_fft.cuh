// fftconv/detail/kernels/register_fft.cuh — a complex FFT of N = 2^p points held in
// one thread's registers (every index a compile-time constant, so the array
// never leaves registers), radix-2 decimation in time with its twiddles as
// factor and slope (three fused multiply-adds a butterfly half), computed at
// compile time in double and rounded once to float.
//
// Host and device: the transforms also run on the CPU, where the host tests
// check their arithmetic against a float64 DFT without a GPU. Each table is
// one constexpr object per side (device memory in device code, host memory
// in host code), read through an accessor whose device branch is the plain
// table read, so the kernels' code is what it was.
#pragma once

#include <cuda_runtime.h>

// `#pragma unroll` in the functions below, which the host compiles too:
// asked of the device compiler only (the host compiler does not know it).
#ifndef FFTCONV_DETAIL_DEVICE_UNROLL
#define FFTCONV_DETAIL_PRAGMA(text) _Pragma(#text)
#ifdef __CUDA_ARCH__
#define FFTCONV_DETAIL_DEVICE_UNROLL(count) FFTCONV_DETAIL_PRAGMA(unroll count)
#else
#define FFTCONV_DETAIL_DEVICE_UNROLL(count)
#endif
#endif

namespace fftconv::detail {

// cos and sin of 2*pi*k/n in double, at compile time (std::cos is not
// constexpr in C++20): reduce to an angle in [0, pi/4], then Taylor series
// to 1e-17. Used only to build the twiddle tables below.
constexpr double taylor_sin(double x) {
    double term = x, sum = x;
    for (int i = 1; i < 14; ++i) {
        term *= -x * x / double((2 * i) * (2 * i + 1));
        sum += term;
    }
    return sum;
}
constexpr double taylor_cos(double x) {
    double term = 1, sum = 1;
    for (int i = 1; i < 14; ++i) {
        term *= -x * x / double((2 * i - 1) * (2 * i));
        sum += term;
    }
    return sum;
}

struct cos_sin {
    double c, s;
};

// exp(2*pi*i*k/n) for 0 <= k < n, by octant symmetry.
constexpr cos_sin unit_root(long k, long n) {
    constexpr double pi = 3.14159265358979323846264338327950288;
    k %= n;
    // Work in units of n/8: octant index and remainder.
    const long eighth_num = 8 * k;
    const long octant = eighth_num / n;
    const double frac = double(eighth_num - octant * n) / double(n);  // in [0, 1)
    const double angle = frac * pi / 4;                               // in [0, pi/4)
    const double c = taylor_cos(angle), s = taylor_sin(angle);
    const double c2 = taylor_cos(pi / 4 - angle), s2 = taylor_sin(pi / 4 - angle);
    switch (octant) {  // angle_total = octant*pi/4 + angle
        case 0: return {c, s};
        case 1: return {s2, c2};
        case 2: return {-s, c};
        case 3: return {-c2, s2};
        case 4: return {-c, -s};
        case 5: return {-s2, -c2};
        case 6: return {s, -c};
        default: return {c2, -s2};
    }
}

__host__ __device__ __forceinline__ float2 operator+(float2 a, float2 b) { return {a.x + b.x, a.y + b.y}; }
__host__ __device__ __forceinline__ float2 operator-(float2 a, float2 b) { return {a.x - b.x, a.y - b.y}; }

// The host side's copy of a compile-time table (the device side's is a
// __device__ variable beside each table).
template <class Table>
inline constexpr Table host_table{};

__host__ __device__ constexpr int bit_reverse(int k, int n) {
    int r = 0;
    for (int bit = 1; bit < n; bit <<= 1) {
        r = (r << 1) | (k & 1);
        k >>= 1;
    }
    return r;
}

__host__ __device__ constexpr bool is_power_of_two(int n) { return n > 0 && (n & (n - 1)) == 0; }

// bit_reversed<N>.index[k] = bit_reverse(k, N), as a table the compiler
// folds when k is a compile-time constant.
template <int N>
struct bit_reversal_table {
    int index[N];
    constexpr bit_reversal_table() : index{} {
        for (int k = 0; k < N; ++k) index[k] = bit_reverse(k, N);
    }
};
template <int N>
__device__ constexpr bit_reversal_table<N> bit_reversed{};

// bit_reverse(k, N) from the table of the side that runs.
template <int N>
__host__ __device__ __forceinline__ int bit_reversed_index(int k) {
#ifdef __CUDA_ARCH__
    return bit_reversed<N>.index[k];
#else
    return host_table<bit_reversal_table<N>>.index[k];
#endif
}

// A twiddle w = (c, s) as a factor and a slope, for butterflies a +- w b in
// three fused multiply-adds per component pair: w b = f (b.x - q b.y, b.y + q b.x)
// with f = c, q = s / c where |c| >= |s|, and w b = f (q b.x - b.y, q b.y + b.x)
// with f = s, q = c / s otherwise (|q| <= 1 either way, so no rounding grows).
// Six instructions a butterfly, not eight (a complex multiply, then two
// complex adds). Computed at compile time in double, rounded once.
struct slope_twiddle {
    float factor, slope;
    bool cosine_major;  // f = c (else f = s)
};

// exp(-2 pi i k / N) for k < N/2: the forward DIT twiddles as slopes; the
// inverse uses their conjugates (s negated).
template <int N, bool Inverse>
struct slope_table {
    slope_twiddle w[N / 2];
    constexpr slope_table() : w{} {
        for (int k = 0; k < N / 2; ++k) {
            const cos_sin r = unit_root(k, N);
            const double c = r.c, sn = Inverse ? r.s : -r.s;
            const bool major = (c < 0 ? -c : c) >= (sn < 0 ? -sn : sn);
            w[k] = major ? slope_twiddle{float(c), float(sn / c), true} : slope_twiddle{float(sn), float(c / sn), false};
        }
    }
};

template <int N, bool Inverse>
__device__ constexpr slope_table<N, Inverse> slopes{};

template <int N, bool Inverse>
__host__ __device__ __forceinline__ slope_twiddle slope_of(int k) {
#ifdef __CUDA_ARCH__
    return slopes<N, Inverse>.w[k];
#else
    return host_table<slope_table<N, Inverse>>.w[k];
#endif
}

// One radix-2 decimation-in-time stage of butterflies `Span` apart, then the
// next (twice the span). Template recursion, so every index is a constant.
template <int N, int Span, bool Inverse>
__host__ __device__ __forceinline__ void dit_stages(float2 (&v)[N]) {
    FFTCONV_DETAIL_DEVICE_UNROLL()
    for (int group = 0; group < N; group += 2 * Span) {
        FFTCONV_DETAIL_DEVICE_UNROLL()
        for (int j = 0; j < Span; ++j) {
            const float2 a = v[group + j];
            const float2 b = v[group + j + Span];
            const int k = j * (N / (2 * Span));  // the twiddle W_N^k
            if (k == 0) {
                v[group + j] = a + b;
                v[group + j + Span] = a - b;
            } else if (k == N / 4) {
                // W = -i (forward) or +i (inverse): a swap, no multiply.
                const float2 t = Inverse ? float2{-b.y, b.x} : float2{b.y, -b.x};
                v[group + j] = a + t;
                v[group + j + Span] = a - t;
            } else {
                const slope_twiddle w = slope_of<N, Inverse>(k);
                const float2 u = w.cosine_major ? float2{fmaf(-w.slope, b.y, b.x), fmaf(w.slope, b.x, b.y)}
                                                : float2{fmaf(w.slope, b.x, -b.y), fmaf(w.slope, b.y, b.x)};
                v[group + j] = float2{fmaf(w.factor, u.x, a.x), fmaf(w.factor, u.y, a.y)};
                v[group + j + Span] = float2{fmaf(-w.factor, u.x, a.x), fmaf(-w.factor, u.y, a.y)};
            }
        }
    }
    if constexpr (2 * Span < N) dit_stages<N, 2 * Span, Inverse>(v);
}

// In-place radix-2 decimation in time: bit-reversed order in (v[k] holds
// x[bit_reverse(k, N)]), natural order out (v[k] holds X[k]). Callers read
// their input through bit_reversed_index<N> (compile-time indices: free) and store
// the result in order. Inverse = conjugate twiddles, unnormalised (like cuFFT).
template <int N, bool Inverse>
__host__ __device__ __forceinline__ void fft_in_registers(float2 (&v)[N]) {
    static_assert(is_power_of_two(N) && N >= 2, "register FFTs are radix-2");
    dit_stages<N, 1, Inverse>(v);
}

// The same transform of an input whose points from N >> ZeroStages on are
// zero (a filter in its zero-padded tile): only v[s] with s a multiple of
// 2^ZeroStages need hold their point (those are the points below
// N >> ZeroStages in bit-reversed order). The first ZeroStages stages
// combine each such point with zeros only, which gives 2^ZeroStages copies
// of it; they are made directly and the transform goes on from there, with
// the same arithmetic as the full transform on the same values (adding an
// exact zero changes nothing), so the result is the full transform's.
template <int N, bool Inverse, int ZeroStages>
__host__ __device__ __forceinline__ void fft_in_registers_of_prefix(float2 (&v)[N]) {
    static_assert(ZeroStages >= 0 && (N >> ZeroStages) >= 2, "at least two points are transformed");
    constexpr int copies = 1 << ZeroStages;
    FFTCONV_DETAIL_DEVICE_UNROLL()
    for (int s = 0; s < N; s += copies)
        FFTCONV_DETAIL_DEVICE_UNROLL()
        for (int j = 1; j < copies; ++j) v[s + j] = v[s];
    dit_stages<N, copies, Inverse>(v);
}

}  // namespace fftconv::detail
