// fftconv/detail/tiling.hpp — how one pass over a problem is cut into tiles,
// where each intermediate lives in the workspace, and how a problem too large
// for the workspace limit is split into passes.
//
// Layouts (why: the batched GEMM needs, for every frequency bin, a dense
// column-major matrix, so spectra are stored bin-major; the transforms write
// them there directly):
//   real tiles       [channel][batch][tile_row][tile_col][T][T]   float (cuFFT path only)
//   input spectrum   [bin][in_channel][gemm_row]                  complex
//   filter spectrum  [bin][in_channel][out_channel]               complex
//   output spectrum  [bin][out_channel][gemm_row]                 complex
// with gemm_row = batch_index * tile_slots + tile_row * tiles_wide + tile_col.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fftconv/config.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

inline constexpr std::size_t workspace_alignment = 256;

constexpr std::size_t align_up(std::size_t bytes) {
    return (bytes + workspace_alignment - 1) / workspace_alignment * workspace_alignment;
}

// Tile extents with a fused transform (fused_tile_fft.cuh): a T-point row
// must fit one thread's registers. Other extents go through cuFFT.
constexpr bool has_fused_fft(int tile_extent) {
    return tile_extent == 16 || tile_extent == 32 || tile_extent == 64;
}

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The cuFFT path keeps its intermediates (real tiles, spectra, the GEMM) in
// double: its tiles are larger than the fused ones and each stage is a
// separate pass, and in float it missed the accuracy bar (relative L2 5e-7
// against float64) on H200 runs: 5.3e-7 at T = 56, 7.5e-7 at T = 1024, 7.1e-7
// for a 256-channel contraction of positive data at T = 2
// (results/reliability-60aec5a). The fused extents stay in float: they meet
// the bar with room (worst 3.8e-7 on the leaderboard, both distributions).
constexpr bool double_intermediates(int tile_extent) { return !has_fused_fft(tile_extent); }
constexpr std::size_t real_bytes(tile_shape s) { return double_intermediates(s.tile_extent) ? 8 : 4; }
constexpr std::size_t complex_bytes(tile_shape s) { return 2 * real_bytes(s); }

// The distance between consecutive bins of a spectrum of `count` transforms
// (see tiling::input_bin_stride).
constexpr std::int64_t bin_stride(std::int64_t count, tile_shape s) {
    return has_fused_fft(s.tile_extent) ? (count + 3) / 4 * 4 : count;
}

// Where element (b, c, i, j) of an NCHW tensor lives: b * batch + c * channel
// + i * row + j. A pass over part of a problem sees x and y through these, so
// a band of rows or a range of channels needs no copy.
struct tensor_strides {
    std::int64_t batch;
    std::int64_t channel;
    std::int64_t row;
};

constexpr tensor_strides dense_strides(std::int64_t channels, std::int64_t height, std::int64_t width) {
    return {channels * height * width, height * width, width};
}

struct tiling {
    tile_shape shape;
    bool fused;                    // fused transforms: no real tiles, no cuFFT plans
    bool holds_filter;             // the workspace holds a filter spectrum (no filter_spectrum object given)
    std::int64_t tiles_high;       // tiles per image along the height
    std::int64_t tiles_wide;       // tiles per image along the width
    std::int64_t tiles_per_image;
    // Rows each image takes in the spectra: tiles_per_image, rounded up to
    // even on the fused path, whose transforms pair tiles (n, n + 1) — so a
    // pair never spans two images (a NaN in one sample cannot reach another).
    // The extra slot is an all-zero tile.
    std::int64_t tile_slots;
    std::int64_t gemm_rows;        // M of every per-bin GEMM: batch * tile_slots
    std::int64_t filter_matrix;    // in_channels * out_channels

    // Distance between consecutive bins in each spectrum: the transform's
    // batch count, rounded up to a multiple of 4 on the fused path (16-byte
    // aligned bins).
    std::int64_t input_bin_stride;
    std::int64_t filter_bin_stride;
    std::int64_t output_bin_stride;

    // Element counts of each intermediate.
    std::int64_t real_elements;             // the real tile buffer (cuFFT path only; 0 when fused)
    std::int64_t input_spectrum_elements;
    std::int64_t filter_spectrum_elements;  // 0 when !holds_filter
    std::int64_t output_spectrum_elements;

    // Byte offsets in the workspace (the cuFFT work area comes last).
    std::size_t real_offset() const { return 0; }
    std::size_t input_spectrum_offset() const {
        return real_offset() + align_up(real_bytes(shape) * std::size_t(real_elements));
    }
    std::size_t filter_spectrum_offset() const {
        return input_spectrum_offset() + align_up(complex_bytes(shape) * std::size_t(input_spectrum_elements));
    }
    std::size_t output_spectrum_offset() const {
        return filter_spectrum_offset() + align_up(complex_bytes(shape) * std::size_t(filter_spectrum_elements));
    }
    std::size_t fft_work_offset() const {
        return output_spectrum_offset() + align_up(complex_bytes(shape) * std::size_t(output_spectrum_elements));
    }
};

// The tiling of one pass: `p` holds the pass's extents (its batch, its output
// channels, its band of rows).
constexpr tiling make_tiling(const problem& p, tile_shape s, bool holds_filter = true) {
    tiling t{};
    t.shape = s;
    t.fused = has_fused_fft(s.tile_extent);
    t.holds_filter = holds_filter;
    t.tiles_high = ceil_div(p.out_height(), s.out_tile());
    t.tiles_wide = ceil_div(p.out_width(), s.out_tile());
    t.tiles_per_image = t.tiles_high * t.tiles_wide;
    t.tile_slots = t.fused ? (t.tiles_per_image + 1) / 2 * 2 : t.tiles_per_image;
    t.gemm_rows = p.batch * t.tile_slots;
    t.filter_matrix = p.in_channels * p.out_channels;
    const std::int64_t tile_count = std::max({p.in_channels * t.gemm_rows, p.out_channels * t.gemm_rows,
                                              holds_filter ? t.filter_matrix : 0});
    t.real_elements = t.fused ? 0 : tile_count * s.tile_elements();
    t.input_bin_stride = bin_stride(p.in_channels * t.gemm_rows, s);
    t.filter_bin_stride = bin_stride(t.filter_matrix, s);
    t.output_bin_stride = bin_stride(p.out_channels * t.gemm_rows, s);
    t.input_spectrum_elements = s.freq_bins() * t.input_bin_stride;
    t.filter_spectrum_elements = holds_filter ? s.freq_bins() * t.filter_bin_stride : 0;
    t.output_spectrum_elements = s.freq_bins() * t.output_bin_stride;
    return t;
}

// How a problem is split into passes, each of which fits the workspace
// limit: `batch` samples at a time first; when one sample is too large, a
// band of `tile_rows` rows of tiles; when one row of tiles is still too large,
// `out_channels` output channels at a time. One pass covering the
// whole problem is the common case.
struct pass_shape {
    std::int64_t batch;
    std::int64_t tile_rows;
    std::int64_t out_channels;

    friend constexpr bool operator==(const pass_shape&, const pass_shape&) = default;
};

// The extents of the pass that starts at sample `batch_first`, tile row
// `tile_row_first` and output channel `out_first` (the last pass along each
// axis may be smaller).
constexpr problem pass_problem(const problem& p, tile_shape s, const pass_shape& pass,
                               std::int64_t batch_first, std::int64_t tile_row_first,
                               std::int64_t out_first) {
    problem q = p;
    q.batch = std::min(pass.batch, p.batch - batch_first);
    q.out_channels = std::min(pass.out_channels, p.out_channels - out_first);
    const std::int64_t first_row = tile_row_first * s.out_tile();
    const std::int64_t out_rows = std::min(pass.tile_rows * s.out_tile(), p.out_height() - first_row);
    q.height = out_rows + p.kernel_extent - 1;
    return q;
}

// Calls f(pass problem, first sample, first tile row, first output channel,
// first pass of these output channels) for every pass of `shape`, in order.
template <class F>
void for_each_pass(const problem& p, tile_shape s, const pass_shape& shape, F&& f) {
    const std::int64_t tiles_high = ceil_div(p.out_height(), s.out_tile());
    for (std::int64_t o0 = 0; o0 < p.out_channels; o0 += shape.out_channels) {
        bool first = true;
        for (std::int64_t b0 = 0; b0 < p.batch; b0 += shape.batch)
            for (std::int64_t r0 = 0; r0 < tiles_high; r0 += shape.tile_rows) {
                f(pass_problem(p, s, shape, b0, r0, o0), b0, r0, o0, first);
                first = false;
            }
    }
}

}  // namespace fftconv::detail
