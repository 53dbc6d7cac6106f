// fftconv/config.hpp — a compile-time tile configuration and everything it fixes.
//
// A tile_config names the three numbers that make an overlap-save convolution
// specialisable: the kernel extent, the channel count (in = out) and the FFT
// tile extent. tile_geometry<Cfg> derives the rest as constants; a compiled
// configuration is matched against a runtime problem by matches().
#pragma once

#include <compare>
#include <cstdint>

namespace fftconv {

// Structural, so it can be a non-type template parameter: conv2d<tile_config{16, 128, 48}>.
struct tile_config {
    int kernel_extent;  // K: the filter is K x K
    int channels;       // input channels = output channels
    int tile_extent;    // T: each FFT tile is T x T

    friend constexpr bool operator==(const tile_config&, const tile_config&) = default;
};

// Per-tile geometry shared by the compile-time and the runtime path. The
// overlap-save algebra: a T x T tile convolved (circularly) with a K x K filter
// has T - K + 1 outputs per side that no wrap-around touched.
//
// Extents fit an int (a tile is never wider than the largest image side plus
// the kernel, and validate() bounds both); every product of two extents is
// 64-bit: T * T passes 2^31 from T = 46341 on.
struct tile_shape {
    int kernel_extent;
    int tile_extent;

    constexpr int out_tile() const { return tile_extent - kernel_extent + 1; }
    // A real FFT of a T x T tile keeps T/2 + 1 columns (Hermitian symmetry).
    constexpr int freq_cols() const { return tile_extent / 2 + 1; }
    // Complex frequency bins per tile: one complex GEMM each.
    constexpr std::int64_t freq_bins() const { return std::int64_t{tile_extent} * freq_cols(); }
    constexpr std::int64_t tile_elements() const { return std::int64_t{tile_extent} * tile_extent; }
    constexpr bool valid() const { return kernel_extent >= 1 && tile_extent >= kernel_extent; }
};

// Everything a tile_config fixes, as constants. Kernels are written against
// members with these names, so they compile both for this type (constants,
// folded away) and for runtime_geometry (values read at run time).
template <tile_config Cfg>
struct tile_geometry {
    static constexpr tile_config config = Cfg;
    static constexpr int kernel_extent = Cfg.kernel_extent;
    static constexpr int channels = Cfg.channels;
    static constexpr int tile_extent = Cfg.tile_extent;
    static constexpr tile_shape shape{kernel_extent, tile_extent};
    static constexpr int out_tile = shape.out_tile();
    static constexpr int freq_cols = shape.freq_cols();
    static constexpr std::int64_t freq_bins = shape.freq_bins();
    static constexpr std::int64_t tile_elements = shape.tile_elements();
    // The filter spectrum holds one (in_channels x out_channels) matrix per bin.
    static constexpr std::int64_t filter_matrix = std::int64_t{channels} * channels;
    static constexpr std::int64_t filter_spectrum_elements = filter_matrix * freq_bins;

    static_assert(kernel_extent >= 1, "the kernel extent must be at least 1");
    static_assert(channels >= 1, "a configuration needs at least one channel");
    static_assert(tile_extent > kernel_extent,
                  "a tile must be larger than the kernel, or it yields a single output per side");
    static_assert(out_tile >= 1 && out_tile <= tile_extent, "each tile yields 1..T outputs per side");
    static_assert(tile_extent % 2 == 0,
                  "compiled tiles are even, so the real FFT's T/2+1 columns hold no redundant bin");
    static_assert(filter_spectrum_elements < (std::int64_t{1} << 31),
                  "a compiled filter spectrum must be indexable with 32-bit cuBLAS strides");
};

// True for tile_geometry<Cfg>: its members are compile-time constants.
template <class Geometry>
inline constexpr bool is_compiled_geometry = false;
template <tile_config Cfg>
inline constexpr bool is_compiled_geometry<tile_geometry<Cfg>> = true;

// The same names as tile_geometry, as runtime values (the generic path).
struct runtime_geometry {
    int kernel_extent;
    int tile_extent;
    int out_tile;
    int freq_cols;
    std::int64_t freq_bins;
    std::int64_t tile_elements;

    static constexpr runtime_geometry from(tile_shape s) {
        return {s.kernel_extent, s.tile_extent, s.out_tile(), s.freq_cols(), s.freq_bins(),
                s.tile_elements()};
    }
};

}  // namespace fftconv
