// fftconv/detail/radix3_line_fft.cuh — a complex FFT of T = 3 P points
// (P = 16 or 32: T = 48 or 96) along one line of a tile in shared memory,
// done by the thread that owns the line.
//
// Why these extents: a depthwise convolution runs one tile pair per kernel
// (fused_depthwise.cuh), and one tile covers an image when T >= extent +
// padding. The power-of-two extents leave large gaps there: a 56 x 56 image
// with 'same' padding for K = 31 needs 71 points, for K = 51 81, so it took
// four or sixteen 64-point tiles; one 96-point tile holds either (1.8x and
// 7x fewer points). A 28 x 28 image with K = 29 needs 42: 48 points, not 64.
//
// Why in shared memory: a power-of-two line of up to 64 points is
// transformed in one thread's registers (register_fft.cuh), but 96 complex
// values are 192 registers. Here the line's three interleaved P-point
// subsequences (elements 3m + r) are transformed one at a time in registers,
// each written back into the slots it came from, and a radix-3 step combines
// them:
//   X[k + P s] = sum_r  w_T^(r k) X_r[k]  w_3^(r s),   k < P, s < 3,
// which reads the three slots of X_0[k], X_1[k], X_2[k] and writes its three
// outputs into those same slots: X[k + P s] lands in the slot element 3k + s
// came from. Every transform is in place, touching only its own line, so
// no barrier is needed inside it; the price is that a transform leaves its
// outputs in digit-reversed order, f -> 3 (f mod P) + f / P (digit_reversed),
// composed with whatever order its input was in. The depthwise kernel
// tracks that order through its passes (placed_at).
#pragma once

#include <cuda_runtime.h>

#include "fftconv/detail/register_fft.cuh"

namespace fftconv::detail {

// Extents of the form 3 P, P a power of two from 16 on.
__host__ __device__ constexpr bool is_radix3_extent(int n) { return n % 3 == 0 && n >= 48 && is_power_of_two(n / 3); }

// Where a transform of T = 3P points leaves output f when its input was in
// natural order: the slot of element 3 (f mod P) + f / P.
template <int T>
__host__ __device__ constexpr int digit_reversed(int f) {
    constexpr int P = T / 3;
    return 3 * (f % P) + f / P;
}
// Its inverse: the output a slot holds.
template <int T>
__host__ __device__ constexpr int digit_unreversed(int slot) {
    return slot / 3 + T / 3 * (slot % 3);
}

// The slot of element n of a line after `order` transforms (order 0: natural).
template <int T>
__host__ __device__ constexpr int placed_at(int order, int n) {
    for (int i = 0; i < order; ++i) n = digit_reversed<T>(n);
    return n;
}
// The element a slot holds after `order` transforms.
template <int T>
__host__ __device__ constexpr int element_at(int order, int slot) {
    for (int i = 0; i < order; ++i) slot = digit_unreversed<T>(slot);
    return slot;
}

// placed_at(Order, n) for every n, as a table the compiler folds at
// compile-time indices (like bit_reversed).
template <int T, int Order>
struct placement_table {
    int slot[T];
    constexpr placement_table() : slot{} {
        for (int n = 0; n < T; ++n) slot[n] = placed_at<T>(Order, n);
    }
};
template <int T, int Order>
__device__ constexpr placement_table<T, Order> placement{};

// w_T^(r k) = exp(-+2 pi i r k / T) for r = 1, 2 and k < T / 3, computed in
// double at compile time and rounded once.
template <int T, bool Inverse>
struct radix3_twiddle_table {
    float2 w[2][T / 3];
    constexpr radix3_twiddle_table() : w{} {
        for (int r = 1; r <= 2; ++r)
            for (int k = 0; k < T / 3; ++k) {
                const cos_sin u = unit_root(long(r) * k, T);
                w[r - 1][k] = float2{float(u.c), float(Inverse ? u.s : -u.s)};
            }
    }
};
template <int T, bool Inverse>
__device__ constexpr radix3_twiddle_table<T, Inverse> radix3_twiddles{};

// Keeps the compiler from moving shared-memory accesses across it. Without
// it every load of a line was hoisted to the top of its transform (they
// touch other slots than the stores between them), and the 96-point kernel
// took 232 registers. The radix-3 step's loads go radix3_batch at a time.
__device__ __forceinline__ void compiler_fence() { asm volatile("" ::: "memory"); }
inline constexpr int radix3_batch = 8;

__device__ __forceinline__ float2 complex_times(float2 a, float2 b) {
    return float2{fmaf(a.x, b.x, -a.y * b.y), fmaf(a.x, b.y, a.y * b.x)};
}

// The line line[slot * stride], slot < T, whose element n sits in slot
// placed_at(InOrder, n), transformed in place (forward, or unnormalised
// inverse): output f ends in slot placed_at(InOrder + 1, f).
template <int T, bool Inverse, int InOrder>
__device__ __forceinline__ void radix3_line_fft(float2* line, int stride) {
    static_assert(is_radix3_extent(T), "radix-3 lines have 3 P points, P a power of two from 16");
    constexpr int P = T / 3;
    constexpr auto& at = placement<T, InOrder>;
    // Subsequences r = 0, 1: X_r[k] back into the slots of elements 3k + r.
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        compiler_fence();
        float2 v[P];
#pragma unroll
        for (int j = 0; j < P; ++j) v[j] = line[at.slot[3 * bit_reversed<P>.index[j] + r] * stride];
        fft_in_registers<P, Inverse>(v);
#pragma unroll
        for (int k = 0; k < P; ++k) line[at.slot[3 * k + r] * stride] = v[k];
    }
    // Subsequence 2 stays in registers for the radix-3 step.
    compiler_fence();
    float2 v[P];
#pragma unroll
    for (int j = 0; j < P; ++j) v[j] = line[at.slot[3 * bit_reversed<P>.index[j] + 2] * stride];
    fft_in_registers<P, Inverse>(v);
    // w_3 = -1/2 -+ i sqrt(3)/2: X[k + P s] = a + b w_3^s + c w_3^(2s) with
    // b, c the twiddled X_1[k], X_2[k].
    constexpr float half_sqrt3 = Inverse ? -0.866025403784438647f : 0.866025403784438647f;
#pragma unroll
    for (int k = 0; k < P; ++k) {
        if (k % radix3_batch == 0) compiler_fence();
        const float2 a = line[at.slot[3 * k] * stride];
        const float2 b = k == 0 ? line[at.slot[3 * k + 1] * stride]
                                : complex_times(line[at.slot[3 * k + 1] * stride], radix3_twiddles<T, Inverse>.w[0][k]);
        const float2 c = k == 0 ? v[k] : complex_times(v[k], radix3_twiddles<T, Inverse>.w[1][k]);
        const float2 sum = b + c, difference = b - c;
        const float2 middle{fmaf(-0.5f, sum.x, a.x), fmaf(-0.5f, sum.y, a.y)};
        // -i sqrt(3)/2 (b - c) forward, +i sqrt(3)/2 (b - c) inverse
        const float2 turn{half_sqrt3 * difference.y, -half_sqrt3 * difference.x};
        line[at.slot[3 * k] * stride] = a + sum;
        line[at.slot[3 * k + 1] * stride] = middle + turn;
        line[at.slot[3 * k + 2] * stride] = middle - turn;
    }
}

}  // namespace fftconv::detail
