// fftconv/config.hpp — the tile geometry: the one vocabulary for the numbers
// that define an overlap-save convolution, each a compile-time constant or a
// runtime value.
//
// A tile_config names what a compiled configuration fixes: the kernel
// extent K, the channel count C (in = out), the FFT tile extent T, and
// whether it is dense (groups 1) or depthwise (groups C).
// tile_geometry<K, C, T> holds them, each either static (a template argument,
// folded into every kernel that reads it) or dynamic_extent (a runtime value
// stored in the object), and derives everything else from them once: the
// output tile, the frequency columns and bins, the filter matrix. The generic
// path runs tile_geometry<> (all dynamic); a compiled configuration runs
// geometry_of<Cfg> (all static); the generic path's fused transforms run
// tile_geometry<dynamic_extent, dynamic_extent, T> (only T static).
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include <compare>
#include <cstddef>
#include <cstdint>

#include "fftconv/detail/tiling/tile_family.hpp"  // the tile extents with fused kernels

namespace fftconv {

// Structural, so it can be a non-type template parameter: conv2d<tile_config{16, 128, 48}>.
struct tile_config {
    int kernel_extent;       // K: the filter is K x K
    int channels;            // input channels = output channels
    int tile_extent;         // T: each FFT tile is T x T
    bool depthwise = false;  // groups = channels (one input channel per output channel), else groups 1

    friend constexpr bool operator==(const tile_config&, const tile_config&) = default;
};

// The template argument that makes an extent a runtime value.
inline constexpr int dynamic_extent = -1;

namespace detail {

// One extent: the constant N, or (N = dynamic_extent) an int read at run time.
template <int N, class Int>
struct extent {
    static constexpr bool is_static = true;
    constexpr extent() = default;
    FFTCONV_HOST_DEVICE constexpr explicit extent(Int) {}
    FFTCONV_HOST_DEVICE static constexpr Int get() { return N; }
};

template <class Int>
struct extent<dynamic_extent, Int> {
    static constexpr bool is_static = false;
    Int value = 0;
    constexpr extent() = default;
    FFTCONV_HOST_DEVICE constexpr explicit extent(Int v) : value(v) {}
    FFTCONV_HOST_DEVICE constexpr Int get() const { return value; }
};

}  // namespace detail

// The overlap-save algebra: a T x T tile convolved (circularly) with a
// Kh x Kw filter has T - Kh + 1 rows and T - Kw + 1 columns of outputs that no
// wrap-around touched. A static kernel extent K means a K x K kernel.
//
// Extents fit an int (a tile is never wider than the largest image side plus
// the kernel, and validate() bounds both); every product of two extents is
// 64-bit: T * T passes 2^31 from T = 46341 on.
//
// Channels: a static C means C input and C output channels. Device code reads
// only in_channels() (the contraction depth); output channel counts come from
// the pass being run, since a problem too large for the workspace runs its
// output channels in groups (detail/tiling/pass_schedule.hpp).
template <int KernelExtent = dynamic_extent, int Channels = dynamic_extent, int TileExtent = dynamic_extent>
class tile_geometry {
public:
    static constexpr bool static_kernel = KernelExtent != dynamic_extent;
    static constexpr bool static_channels = Channels != dynamic_extent;
    static constexpr bool static_tile = TileExtent != dynamic_extent;
    // Every extent a constant: a compiled configuration.
    static constexpr bool compiled = static_kernel && static_channels && static_tile;
    // The template arguments (dynamic_extent where dynamic), for `if constexpr`
    // and for kernels that need an extent as a constant expression.
    static constexpr tile_config static_extents{KernelExtent, Channels, TileExtent};

    // A geometry whose every extent is static needs no arguments.
    constexpr tile_geometry() = default;
    // Any geometry from runtime values; a static extent must equal its value
    // (checked by matches(), not here: constexpr constructors cannot throw
    // on the device).
    FFTCONV_HOST_DEVICE constexpr tile_geometry(int kernel_height, int kernel_width, std::int64_t in_channels,
                                                std::int64_t out_channels, int tile_extent)
        : kernel_height_(kernel_height), kernel_width_(kernel_width), in_(in_channels), out_(out_channels),
          tile_(tile_extent) {}

    FFTCONV_HOST_DEVICE constexpr int kernel_height() const { return kernel_height_.get(); }
    FFTCONV_HOST_DEVICE constexpr int kernel_width() const { return kernel_width_.get(); }
    FFTCONV_HOST_DEVICE constexpr std::int64_t in_channels() const { return in_.get(); }
    FFTCONV_HOST_DEVICE constexpr std::int64_t out_channels() const { return out_.get(); }
    FFTCONV_HOST_DEVICE constexpr int tile_extent() const { return tile_.get(); }

    // Outputs per tile that no wrap-around reached: rows, columns.
    FFTCONV_HOST_DEVICE constexpr int out_tile_height() const { return tile_extent() - kernel_height() + 1; }
    FFTCONV_HOST_DEVICE constexpr int out_tile_width() const { return tile_extent() - kernel_width() + 1; }
    // A real FFT of a T x T tile keeps T/2 + 1 columns (Hermitian symmetry).
    FFTCONV_HOST_DEVICE constexpr int freq_cols() const { return tile_extent() / 2 + 1; }
    // Complex frequency bins per tile: one complex GEMM each.
    FFTCONV_HOST_DEVICE constexpr std::int64_t freq_bins() const { return std::int64_t{tile_extent()} * freq_cols(); }
    FFTCONV_HOST_DEVICE constexpr std::int64_t tile_elements() const { return std::int64_t{tile_extent()} * tile_extent(); }
    // The filter spectrum holds one (in_channels x out_channels) matrix per bin.
    FFTCONV_HOST_DEVICE constexpr std::int64_t filter_matrix() const { return in_channels() * out_channels(); }

    // Fused transforms (no real tiles, no cuFFT plans), or cuFFT.
    FFTCONV_HOST_DEVICE constexpr bool fused() const { return has_fused_fft(tile_extent()); }
    // The cuFFT path keeps its intermediates (real tiles, spectra, the GEMM)
    // in double: its tiles are larger than the fused ones and each stage is a
    // separate pass, and in float it misses the accuracy bar (relative L2
    // 5e-7 against float64): 5.3e-7 at T = 56, 7.5e-7 at T = 1024, 7.1e-7
    // for a 256-channel contraction of positive data at T = 2. The fused
    // extents stay in float:
    // they meet the bar with room (worst 3.8e-7 on the leaderboard).
    FFTCONV_HOST_DEVICE constexpr bool double_intermediates() const { return !fused(); }
    FFTCONV_HOST_DEVICE constexpr std::size_t real_bytes() const { return double_intermediates() ? 8 : 4; }
    FFTCONV_HOST_DEVICE constexpr std::size_t complex_bytes() const { return 2 * real_bytes(); }

    FFTCONV_HOST_DEVICE constexpr bool valid() const {
        return kernel_height() >= 1 && kernel_width() >= 1 && tile_extent() >= kernel_height() &&
               tile_extent() >= kernel_width();
    }

    // The same geometry with every extent a runtime value.
    FFTCONV_HOST_DEVICE constexpr tile_geometry<> erased() const {
        return {kernel_height(), kernel_width(), in_channels(), out_channels(), tile_extent()};
    }

    // The same geometry with the tile extent the constant T (== tile_extent()).
    template <int T>
    FFTCONV_HOST_DEVICE constexpr tile_geometry<KernelExtent, Channels, T> with_static_tile() const {
        return {kernel_height(), kernel_width(), in_channels(), out_channels(), T};
    }

    FFTCONV_HOST_DEVICE friend constexpr bool operator==(const tile_geometry& a, const tile_geometry& b) {
        return a.kernel_height() == b.kernel_height() && a.kernel_width() == b.kernel_width() &&
               a.in_channels() == b.in_channels() &&
               a.out_channels() == b.out_channels() && a.tile_extent() == b.tile_extent();
    }

    static_assert(!static_kernel || KernelExtent >= 1, "the kernel extent must be at least 1");
    static_assert(!static_channels || Channels >= 1, "a configuration needs at least one channel");
    static_assert(!static_tile || TileExtent >= 1, "the tile extent must be at least 1");
    static_assert(!(static_kernel && static_tile) || TileExtent > KernelExtent,
                  "a tile must be larger than the kernel, or it yields a single output per side");
    static_assert(!compiled || TileExtent % 2 == 0,
                  "compiled tiles are even, so the real FFT's T/2+1 columns hold no redundant bin");
    static_assert(!compiled || std::int64_t{Channels} * Channels * TileExtent * (TileExtent / 2 + 1) <
                                   (std::int64_t{1} << 31),
                  "a compiled filter spectrum must be indexable with 32-bit cuBLAS strides");

private:
    detail::extent<KernelExtent, int> kernel_height_;
    detail::extent<KernelExtent, int> kernel_width_;
    detail::extent<Channels, std::int64_t> in_;
    detail::extent<Channels, std::int64_t> out_;
    detail::extent<TileExtent, int> tile_;
};

// The geometry a tile_config fixes: every extent static.
template <tile_config Cfg>
using geometry_of = tile_geometry<Cfg.kernel_extent, Cfg.channels, Cfg.tile_extent>;

}  // namespace fftconv
