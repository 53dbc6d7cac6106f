// fftconv/detail/tiling/tile_family.hpp — every fact that depends on the
// tile extent T, in one table: how a tile's lines are transformed, the
// shape of the blocks that transform them, and what the layouts and the cost
// model assume of them. Kernels, layouts and cost models read it here;
// adding an extent is adding a row (and, for a new line transform, its
// kernel). Extents without a row run cuFFT.
//
// Why the numbers are what they are (each measured on the H200; the runs are
// in docs/performance.md):
// - pairs: a block holds `pairs` tile pairs, T * pairs threads (128; 96 at
//   the radix-3 extents, where one 96-point pair already takes 73 KiB of
//   shared memory). Twice as many pairs measured slower.
// - line_threads: threads that share one line of the depthwise kernel. At
//   T = 96 one thread a line left an SM 9 warps, latency bound; three fill
//   it. At 48 one is faster (six blocks of 96 threads an SM, fewer barriers).
// - depthwise_min_blocks: blocks per SM the depthwise kernel's registers
//   must allow (__launch_bounds__): as many as shared memory allows, which
//   measured faster than the natural register count despite a little spill
//   (0: no bound).
// - dense_min_blocks: blocks per SM the dense forward transform's registers
//   must allow (__launch_bounds__; 0: no bound). At T = 32 five (96
//   registers): left free, the filter gradient's chunk transform takes 128
//   and four.
// - unrolled_passes: the dense transforms' transposing passes are unrolled
//   (below T = 64, where the unrolled code fits the instruction cache and is
//   faster than the loop); at 64 one FFT body runs in a loop.
// - output_rounding: at T = 96 the depthwise inverse transforms rows in
//   groups of 32 lines, so a tile's outputs are rounded to a multiple of 32
//   where that keeps the tile count (tile_outputs_along).
// - depthwise_pair_seconds_per_point: the depthwise kernel's time per tile
//   pair per T^2 log2(T) points, fitted to the depthwise suite (the
//   dispatch's cost model, src/dispatch/cost_model.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

// Read on the host and in kernels alike.
#ifdef __CUDACC__
#define FFTCONV_HOST_DEVICE __host__ __device__
#else
#define FFTCONV_HOST_DEVICE
#endif

namespace fftconv {

// A list of extents, as a type (so kernels can iterate it at compile time).
template <int... Extents>
struct extent_list {
    FFTCONV_HOST_DEVICE static constexpr bool contains(int extent) { return ((extent == Extents) || ...); }
};

template <int... A, int... B>
constexpr extent_list<A..., B...> operator+(extent_list<A...>, extent_list<B...>) {
    return {};
}

namespace detail {

// How the lines of a T x T tile are transformed.
enum class line_transform {
    cufft,      // by cuFFT, from real tiles in memory (any extent)
    registers,  // one T-point line in one thread's registers (register_fft.cuh): dense and depthwise
    radix3,     // three T/3-point register FFTs joined by a radix-3 step in shared memory
                // (radix3_line_fft.cuh): the depthwise kernel only
};

struct tile_family {
    int tile_extent;
    line_transform lines;
    int pairs;                  // tile pairs a fused block holds
    int line_threads;           // threads per line in the depthwise kernel
    int depthwise_min_blocks;   // __launch_bounds__ of the depthwise kernel (0: none)
    int dense_min_blocks;       // __launch_bounds__ of the dense forward transform (0: none)
    int output_rounding;        // an overlap-save tile's outputs, rounded to a multiple of this
    bool unrolled_passes;       // the dense transforms' passes unrolled (else one FFT body in a loop)
    double depthwise_pair_seconds_per_point;

    // The dense pipeline's transforms are fused kernels (else cuFFT).
    FFTCONV_HOST_DEVICE constexpr bool fused_dense() const { return lines == line_transform::registers; }
    // A depthwise convolution runs one kernel per tile pair, image to y.
    FFTCONV_HOST_DEVICE constexpr bool fused_depthwise() const { return lines != line_transform::cufft; }
    FFTCONV_HOST_DEVICE constexpr int threads() const { return tile_extent * pairs; }
    FFTCONV_HOST_DEVICE constexpr int depthwise_threads() const { return threads() * line_threads; }
    // Float2s from one of a block's complex tiles to the next: T rows T + 1
    // wide (conflict-free row and column walks), then 16 / pairs more, so
    // that one element of consecutive tiles lies 32 / pairs banks apart
    // (T (T + 1) float2s alone are a multiple of 32 words). The dense
    // transforms' split-and-store and the inverse's load give consecutive
    // threads one bin of consecutive tiles: without the offset they
    // collided, ~25% excess shared-memory wavefronts (ncu, docs/performance.md d4).
    FFTCONV_HOST_DEVICE constexpr int tile_stride() const { return tile_extent * (tile_extent + 1) + 16 / pairs; }
    // A block's pairs as complex tiles, tile_stride apart.
    FFTCONV_HOST_DEVICE constexpr std::size_t shared_bytes() const {
        return 2 * sizeof(float) * std::size_t(pairs) * std::size_t(tile_stride());
    }
    // The depthwise kernel's filter spectrum per channel: the half spectrum
    // T (T/2 + 1) where lines are register FFTs; the whole T x T grid in the
    // radix-3 passes' digit-reversed order (fused_depthwise.cuh).
    FFTCONV_HOST_DEVICE constexpr std::int64_t depthwise_filter_bins() const {
        return lines == line_transform::radix3 ? std::int64_t{tile_extent} * tile_extent
                                               : std::int64_t{tile_extent} * (tile_extent / 2 + 1);
    }
};

// The table. A function, not an array, so device code may read it at run time.
FFTCONV_HOST_DEVICE constexpr tile_family tile_family_of(int tile_extent) {
    using enum line_transform;
    // T, lines, pairs, line_threads, depthwise_min_blocks, dense_min_blocks, output_rounding, unrolled_passes,
    // s per pair point
    switch (tile_extent) {
        case 16: return {16, registers, 8, 1, 6, 0, 1, true, 1.75e-12};
        case 32: return {32, registers, 4, 1, 0, 5, 1, true, 1.45e-12};
        case 48: return {48, radix3, 2, 1, 6, 0, 1, true, 1.75e-12};
        case 64: return {64, registers, 2, 1, 3, 0, 1, false, 1.1e-12};
        case 96: return {96, radix3, 1, 3, 3, 0, 32, false, 1.6e-12};
        default: return {tile_extent, cufft, 0, 0, 0, 0, 1, false, 0.0};
    }
}

// The extents with a row, for code that instantiates a kernel per extent.
using family_extents = extent_list<16, 32, 48, 64, 96>;

template <int... Extents>
constexpr bool every_row_named(extent_list<Extents...>) {
    return ((tile_family_of(Extents).lines != line_transform::cufft && tile_family_of(Extents).tile_extent == Extents) &&
            ...);
}
static_assert(every_row_named(family_extents{}), "family_extents and tile_family_of list the same extents");

template <class Pick, int... Extents>
constexpr auto extents_where(extent_list<Extents...>) {
    return (extent_list<>{} + ... + std::conditional_t<Pick{}(Extents), extent_list<Extents>, extent_list<>>{});
}
struct picks_fused_dense {
    constexpr bool operator()(int t) const { return tile_family_of(t).fused_dense(); }
};
struct picks_fused_depthwise {
    constexpr bool operator()(int t) const { return tile_family_of(t).fused_depthwise(); }
};

}  // namespace detail

// Tile extents with a fused transform (detail/kernels/fused_tile_fft.cuh).
// Every other extent goes through cuFFT.
using fused_tile_extents = decltype(detail::extents_where<detail::picks_fused_dense>(detail::family_extents{}));

FFTCONV_HOST_DEVICE constexpr bool has_fused_fft(int tile_extent) {
    return detail::tile_family_of(tile_extent).fused_dense();
}

// Tile extents where a depthwise convolution runs one kernel per tile pair,
// image to y (detail/kernels/fused_depthwise.cuh).
using fused_depthwise_extents =
    decltype(detail::extents_where<detail::picks_fused_depthwise>(detail::family_extents{}));

FFTCONV_HOST_DEVICE constexpr bool has_fused_depthwise(int tile_extent) {
    return detail::tile_family_of(tile_extent).fused_depthwise();
}

}  // namespace fftconv
