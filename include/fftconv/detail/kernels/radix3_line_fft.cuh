// fftconv/detail/kernels/radix3_line_fft.cuh — a complex FFT of T = 3 P points
// (P = 16 or 32: T = 48 or 96) along one line of a tile in shared memory,
// done by one thread or shared by three.
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
// values are 192 registers. The forward transform (decimation in time)
// splits a line into its three interleaved P-point subsequences (elements
// 3m + r): each is transformed in registers (by thread r, where three share
// the line) and X_r[k] written back into the slots it came from (slot
// 3k + r); then (after a barrier, where three share it) a radix-3 step
// combines them,
//   X[k + P s] = sum_r  w_T^(r k) X_r[k]  w_3^(r s),   k < P, s < 3,
// reading the slots 3k, 3k + 1, 3k + 2 and writing its three outputs into
// the same slots (X[k + P s] into slot 3k + s), the k split among the
// line's threads. So the output is in digit-reversed order
// (frequency_in_slot). The inverse runs the adjoint steps in reverse order:
// the radix-3 step on digit-reversed input (conjugate butterfly, then
// conjugate twiddles), then the three inverse P-point transforms, leaving
// natural order. Every step is in place and touches only its own line's
// slots. Three threads share a 96-point line because these kernels are
// latency bound and a 96-point tile pair fills a third of an SM's shared
// memory: one thread a line leaves an SM too few warps (tile_family.hpp,
// line_threads).
#pragma once

#include <cuda_runtime.h>

#include "fftconv/detail/kernels/register_fft.cuh"

namespace fftconv::detail {

// Extents of the form 3 P, P a power of two from 16 on.
__host__ __device__ constexpr bool is_radix3_extent(int n) { return n % 3 == 0 && n >= 48 && is_power_of_two(n / 3); }

// The forward transform leaves output f = k + P s in slot 3k + s (digit
// reversal), where the inverse reads it. The output a slot holds:
__host__ __device__ constexpr int frequency_in_slot(int slot, int tile_extent) {
    return slot / 3 + tile_extent / 3 * (slot % 3);
}
// ... and the slot that holds frequency f (its inverse).
__host__ __device__ constexpr int slot_of_frequency(int f, int tile_extent) {
    return 3 * (f % (tile_extent / 3)) + f / (tile_extent / 3);
}

constexpr bool slots_and_frequencies_invert(int tile_extent) {
    for (int slot = 0; slot < tile_extent; ++slot)
        if (slot_of_frequency(frequency_in_slot(slot, tile_extent), tile_extent) != slot) return false;
    return true;
}
static_assert(slots_and_frequencies_invert(48) && slots_and_frequencies_invert(96));

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

// w_T^((r + 1) k) from the table of the side that runs (register_fft.cuh).
template <int T, bool Inverse>
__host__ __device__ __forceinline__ float2 radix3_twiddle(int r, int k) {
#ifdef __CUDA_ARCH__
    return radix3_twiddles<T, Inverse>.w[r][k];
#else
    return host_table<radix3_twiddle_table<T, Inverse>>.w[r][k];
#endif
}

__host__ __device__ __forceinline__ float2 complex_times(float2 a, float2 b) {
    return float2{fmaf(a.x, b.x, -a.y * b.y), fmaf(a.x, b.y, a.y * b.x)};
}

// Subsequence r of the line line[slot * Stride] (elements 3m + r, m < P),
// transformed in registers (forward, or unnormalised inverse) and written
// back into its own slots: X_r[k] into slot 3k + r.
template <int T, bool Inverse, int Stride>
__host__ __device__ __forceinline__ void radix3_subsequence_fft(float2* line, int r, float2 factor = float2{1.0f, 1.0f}) {
    static_assert(is_radix3_extent(T), "radix-3 lines have 3 P points, P a power of two from 16");
    constexpr int P = T / 3;
    float2* at = line + r * Stride;
    float2 v[P];
    FFTCONV_DETAIL_DEVICE_UNROLL()
    for (int j = 0; j < P; ++j) {
        const float2 loaded = at[3 * bit_reversed_index<P>(j) * Stride];
        v[j] = float2{factor.x * loaded.x, factor.y * loaded.y};
    }
    fft_in_registers<P, Inverse>(v);
    FFTCONV_DETAIL_DEVICE_UNROLL()
    for (int k = 0; k < P; ++k) at[3 * k * Stride] = v[k];
}

// The radix-3 butterfly of index k in registers: forward, the
// subsequences' X_r[k] (a, b, c) -> X[k + P s] (s = 0, 1, 2); inverse, its
// adjoint (conjugate butterfly, then conjugate twiddles: unnormalised).
// w_3 = -1/2 -+ i sqrt(3)/2 and X[k + P s] = a + b w_3^s + c w_3^(2s) for
// a, b, c the twiddled X_r[k].
template <int T, bool Inverse>
__host__ __device__ __forceinline__ void radix3_butterfly(float2& a, float2& b, float2& c, int k) {
    constexpr float half_sqrt3 = Inverse ? -0.866025403784438647f : 0.866025403784438647f;
    if (!Inverse) {
        b = complex_times(b, radix3_twiddle<T, Inverse>(0, k));
        c = complex_times(c, radix3_twiddle<T, Inverse>(1, k));
    }
    const float2 sum = b + c, difference = b - c;
    const float2 middle{fmaf(-0.5f, sum.x, a.x), fmaf(-0.5f, sum.y, a.y)};
    // -i sqrt(3)/2 (b - c) forward, +i sqrt(3)/2 (b - c) inverse
    const float2 turn{half_sqrt3 * difference.y, -half_sqrt3 * difference.x};
    a = a + sum;
    b = middle + turn;
    c = middle - turn;
    if (Inverse) {
        b = complex_times(b, radix3_twiddle<T, Inverse>(0, k));
        c = complex_times(c, radix3_twiddle<T, Inverse>(1, k));
    }
}

// The radix-3 step for k in [k_begin, k_end) of the line line[slot * Stride]:
// the butterfly of each k over the slots 3k, 3k + 1, 3k + 2, in place.
template <int T, bool Inverse, int Stride>
__host__ __device__ __forceinline__ void radix3_step(float2* line, int k_begin, int k_end) {
    float2* at = line + 3 * k_begin * Stride;
    FFTCONV_DETAIL_DEVICE_UNROLL(2)
    for (int k = k_begin; k < k_end; ++k, at += 3 * Stride) {
        float2 a = at[0], b = at[Stride], c = at[2 * Stride];
        radix3_butterfly<T, Inverse>(a, b, c, k);
        at[0] = a;
        at[Stride] = b;
        at[2 * Stride] = c;
    }
}

// The radix-3 steps' share of thread `part` (of Threads) of a line: k in
// [first, last).
template <int T, int Threads>
__host__ __device__ __forceinline__ void radix3_share(int part, int& first, int& last) {
    constexpr int P = T / 3, share = (P + Threads - 1) / Threads;
    first = part * share;
    last = min(P, first + share);
}

}  // namespace fftconv::detail
