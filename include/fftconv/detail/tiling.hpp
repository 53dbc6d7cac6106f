// fftconv/detail/tiling.hpp — how one problem is cut into tiles, and where
// each intermediate lives in the workspace.
//
// Layouts (why: the batched GEMM needs, for every frequency bin, a dense
// column-major matrix, so spectra are stored bin-major; the transforms write
// them there directly):
//   real tiles       [channel][batch][tile_row][tile_col][T][T]   float (cuFFT path only)
//   input spectrum   [bin][in_channel][gemm_row]                  complex
//   filter spectrum  [bin][in_channel][out_channel]               complex
//   output spectrum  [bin][out_channel][gemm_row]                 complex
// with gemm_row = batch_index * tiles_per_image + tile_row * tiles_wide + tile_col.
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

// The distance between consecutive bins of a spectrum of `count` transforms
// (see tiling::input_bin_stride).
constexpr std::int64_t bin_stride(std::int64_t count, tile_shape s) {
    return has_fused_fft(s.tile_extent) ? (count + 3) / 4 * 4 : count;
}

struct tiling {
    tile_shape shape;
    bool fused;                    // fused transforms: no real tiles, no cuFFT plans
    std::int64_t tiles_high;       // tiles per image along the height
    std::int64_t tiles_wide;       // tiles per image along the width
    std::int64_t tiles_per_image;
    std::int64_t gemm_rows;        // M of every per-bin GEMM: batch * tiles_per_image
    std::int64_t filter_matrix;    // in_channels * out_channels

    // Distance between consecutive bins in each spectrum: the transform's
    // batch count, rounded up to a multiple of 4 on the fused path so that
    // every pair of tiles is one aligned 16-byte store.
    std::int64_t input_bin_stride;
    std::int64_t filter_bin_stride;
    std::int64_t output_bin_stride;

    // Element counts of each intermediate.
    std::int64_t real_elements;             // the real tile buffer (cuFFT path only; 0 when fused)
    std::int64_t input_spectrum_elements;
    std::int64_t filter_spectrum_elements;
    std::int64_t output_spectrum_elements;

    // Byte offsets in the workspace (the cuFFT work area comes last).
    std::size_t real_offset() const { return 0; }
    std::size_t input_spectrum_offset() const {
        return real_offset() + align_up(sizeof(float) * std::size_t(real_elements));
    }
    std::size_t filter_spectrum_offset() const {
        return input_spectrum_offset() + align_up(8 * std::size_t(input_spectrum_elements));
    }
    std::size_t output_spectrum_offset() const {
        return filter_spectrum_offset() + align_up(8 * std::size_t(filter_spectrum_elements));
    }
    std::size_t fft_work_offset() const {
        return output_spectrum_offset() + align_up(8 * std::size_t(output_spectrum_elements));
    }
};

constexpr tiling make_tiling(const problem& p, tile_shape s) {
    tiling t{};
    t.shape = s;
    t.fused = has_fused_fft(s.tile_extent);
    t.tiles_high = ceil_div(p.out_height(), s.out_tile());
    t.tiles_wide = ceil_div(p.out_width(), s.out_tile());
    t.tiles_per_image = t.tiles_high * t.tiles_wide;
    t.gemm_rows = p.batch * t.tiles_per_image;
    t.filter_matrix = p.in_channels * p.out_channels;
    const std::int64_t tile_count =
        std::max({p.in_channels * t.gemm_rows, p.out_channels * t.gemm_rows, t.filter_matrix});
    t.real_elements = t.fused ? 0 : tile_count * s.tile_elements();
    t.input_bin_stride = bin_stride(p.in_channels * t.gemm_rows, s);
    t.filter_bin_stride = bin_stride(t.filter_matrix, s);
    t.output_bin_stride = bin_stride(p.out_channels * t.gemm_rows, s);
    t.input_spectrum_elements = std::int64_t{s.freq_bins()} * t.input_bin_stride;
    t.filter_spectrum_elements = std::int64_t{s.freq_bins()} * t.filter_bin_stride;
    t.output_spectrum_elements = std::int64_t{s.freq_bins()} * t.output_bin_stride;
    return t;
}

}  // namespace fftconv::detail
