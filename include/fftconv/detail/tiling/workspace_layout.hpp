// fftconv/detail/tiling/workspace_layout.hpp — how one pass over a problem is cut
// into tiles and where each intermediate lives in the workspace.
//
// Layouts (why: the batched GEMM needs, for every frequency bin, a dense
// column-major matrix, so spectra are stored bin-major; the transforms write
// them there directly):
//   real tiles       [channel][batch][tile_row][tile_col][T][T]   (cuFFT path only)
//   input spectrum   [bin][in_channel][gemm_row]                  complex
//   filter spectrum  [bin][in_channel][out_channel]               complex
//   output spectrum  [bin][out_channel][gemm_row]                 complex
// with gemm_row = batch_index * tile_slots + tile_row * tiles_wide + tile_col.
// Element types: float on the fused path, double on the cuFFT path
// (tile_geometry::double_intermediates).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fftconv/config.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

class engine;
struct fft_transform_key;

inline constexpr std::size_t workspace_alignment = 256;

constexpr std::size_t align_up(std::size_t bytes) {
    return (bytes + workspace_alignment - 1) / workspace_alignment * workspace_alignment;
}

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// The distance between consecutive bins of a spectrum of `count` transforms:
// rounded up to a multiple of 4 on the fused path (16-byte aligned bins).
constexpr std::int64_t bin_stride(std::int64_t count, const tile_geometry<>& g) {
    return g.fused() ? (count + 3) / 4 * 4 : count;
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

// The outputs one tile yields along an axis whose input has `extent`
// elements, `padding` zeros each side and `out_extent` outputs, at tile
// extent T and kernel extent K:
// - overlap-save's T - K + 1, the outputs no circular wrap reaches; or
// - all out_extent of them, where one tile covers the padded image:
//   T >= extent + padding and T >= out_extent. The tile's window starts at
//   -padding, so it holds the whole image; the last output reads up to
//   input column extent + padding - 1 (zeros past the image), and where that
//   passes the window's end the circular correlation wraps to its first
//   extent + 2 padding - T <= padding columns: the zeros before the image.
//   So a 14 x 14 image with K = 27 and padding 13 takes one 32-point tile,
//   not four 64-point ones.
// For an unpadded axis the second case is the first's single tile (it covers
// iff out_extent <= T - K + 1): the rule only ever removes tiles.
//
// Where the tile family rounds its outputs (tile_family::output_rounding: 32
// at T = 96, whose depthwise inverse rows run in groups of 32 lines,
// fused_depthwise.cuh, rows_sync), an overlap-save tile yields the fewest
// outputs that keep its tile count, rounded up to that multiple: 256 x 256
// at K = 31 takes 4 tiles of 64 rows, not of 66, and each tile's last group
// of rows has nothing to transform. (The tile count stays, so a
// dense problem that the cuFFT path runs at T = 96 does the same work.)
constexpr std::int64_t tile_outputs_along(std::int64_t extent, std::int64_t padding, std::int64_t out_extent,
                                          std::int64_t kernel, int tile_extent) {
    const bool covers = tile_extent >= extent + padding && tile_extent >= out_extent;
    if (covers) return out_extent;
    const std::int64_t most = tile_extent - kernel + 1;
    const std::int64_t rounding = tile_family_of(tile_extent).output_rounding;
    if (rounding == 1 || out_extent < 1) return most;
    const std::int64_t fewest = ceil_div(out_extent, ceil_div(out_extent, most));
    return std::min(most, ceil_div(fewest, rounding) * rounding);
}

// Both axes of `p` at tile extent T (each at most T: 32 bits, as kernels
// compare them with a thread's lane).
struct tile_outputs {
    int high;  // output rows per tile
    int wide;  // output columns per tile
};

constexpr tile_outputs tile_outputs_of(const problem& p, int tile_extent) {
    return {int(tile_outputs_along(p.height, p.padding.height, p.out_height(), p.kernel.height, tile_extent)),
            int(tile_outputs_along(p.width, p.padding.width, p.out_width(), p.kernel.width, tile_extent))};
}

// The largest count make_layout forms: 2^52 complex doubles are 64 PiB, no
// device's memory. Counts stop there (and the layout says so: beyond_memory),
// so that no product of counts, nor a byte count made of them, wraps 64 bits
// for any valid problem (a problem's tensors are bounded, its intermediates,
// tiles times channels times bins, are not).
inline constexpr std::int64_t max_layout_count = std::int64_t{1} << 52;

struct workspace_layout {
    tile_geometry<> geometry;      // the pass's: its output channels
    bool holds_filter;             // the workspace holds a filter spectrum (no filter_spectrum object given)
    // Some count reached max_layout_count: no device holds this pass, and
    // its counts are bounds, not the pass's (the cost model and the pass
    // schedule treat it as not fitting).
    bool beyond_memory;
    // Depthwise on a fused_depthwise_extents extent: image to y in one kernel
    // per tile pair (fused_depthwise.cuh), no input or output spectra.
    bool image_to_output;
    // image_to_output on a radix-3 extent: the kernel reads each filter's
    // spectrum over the whole T x T grid in its slot order, which a fresh
    // filter's DFT writes straight into the output spectrum's place
    // (filter_dft.cuh: slot_order_sink), with no filter spectrum between.
    bool slot_ordered_filter;
    tile_outputs outputs;          // per tile (tile_outputs_of)
    std::int64_t tiles_high;       // tiles per image along the height
    std::int64_t tiles_wide;       // tiles per image along the width
    std::int64_t tiles_per_image;
    // Rows each image takes in the spectra: tiles_per_image, rounded up to
    // even on the fused path, whose transforms pair tiles (n, n + 1) — so a
    // pair never spans two images (a NaN in one sample cannot reach another).
    // The extra slot is an all-zero tile.
    std::int64_t tile_slots;
    std::int64_t gemm_rows;        // M of every per-bin GEMM: batch * tile_slots

    // Transforms per spectrum: the cuFFT plans' batch counts, the fused
    // transforms' tile counts.
    std::int64_t input_transforms;   // in_channels * gemm_rows
    std::int64_t filter_transforms;  // in_channels / groups * out_channels
    std::int64_t output_transforms;  // out_channels * gemm_rows

    // Distance between consecutive bins in each spectrum (bin_stride).
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
        return real_offset() + align_up(geometry.real_bytes() * std::size_t(real_elements));
    }
    std::size_t filter_spectrum_offset() const {
        return input_spectrum_offset() + align_up(geometry.complex_bytes() * std::size_t(input_spectrum_elements));
    }
    std::size_t output_spectrum_offset() const {
        return filter_spectrum_offset() + align_up(geometry.complex_bytes() * std::size_t(filter_spectrum_elements));
    }
    std::size_t fft_work_offset() const {
        return output_spectrum_offset() + align_up(geometry.complex_bytes() * std::size_t(output_spectrum_elements));
    }
};

// Depthwise: one input channel per group (channel multiplier >= 1).
constexpr bool is_depthwise(const problem& p) { return p.groups > 1 && p.group_in_channels() == 1; }

// The layout of one pass: `p` holds the pass's extents (its batch, its output
// channels, its band of rows); `tile_extent` is the call's.
constexpr workspace_layout make_layout(const problem& p, int tile_extent, bool holds_filter = true) {
    workspace_layout t{};
    t.geometry = tile_geometry<>(int(p.kernel.height), int(p.kernel.width), p.in_channels, p.out_channels, tile_extent);
    const tile_geometry<>& g = t.geometry;
    t.holds_filter = holds_filter;
    // a * b for counts in [0, max_layout_count], stopped at max_layout_count.
    const auto count = [&t](std::int64_t a, std::int64_t b) {
        if (a != 0 && b > max_layout_count / a) {
            t.beyond_memory = true;
            return max_layout_count;
        }
        return a * b;
    };
    t.image_to_output = is_depthwise(p) && has_fused_depthwise(tile_extent);
    t.slot_ordered_filter = t.image_to_output && tile_family_of(tile_extent).lines == line_transform::radix3;
    t.outputs = tile_outputs_of(p, tile_extent);
    t.tiles_high = ceil_div(p.out_height(), t.outputs.high);
    t.tiles_wide = ceil_div(p.out_width(), t.outputs.wide);
    t.tiles_per_image = count(t.tiles_high, t.tiles_wide);
    // Fused transforms pair tiles n, n + 1 (n even) in one complex transform.
    // A pair must not span two images (a NaN in one would reach the other),
    // so each image gets an even number of slots; depthwise pairs may span two
    // samples of one channel (fused_depthwise.cuh isolates non-finite inputs
    // itself), so only a channel's batch x tiles must be even.
    const bool pairs = g.fused() || t.image_to_output;
    const bool depthwise_pairs = t.image_to_output && (p.batch % 2 == 0 || t.tiles_per_image % 2 == 0);
    t.tile_slots = pairs && !depthwise_pairs ? (t.tiles_per_image + 1) / 2 * 2 : t.tiles_per_image;
    t.gemm_rows = count(p.batch, t.tile_slots);
    t.input_transforms = count(p.in_channels, t.gemm_rows);
    t.filter_transforms = count(p.group_in_channels(), p.out_channels);  // each output channel's group
    t.output_transforms = count(p.out_channels, t.gemm_rows);
    const std::int64_t real_tiles =
        std::max({t.input_transforms, t.output_transforms, holds_filter ? t.filter_transforms : 0});
    // Real tiles: cuFFT's (one kernel from the image to y needs none: its
    // filters are transformed directly, filter_dft.cuh).
    t.real_elements = g.fused() || t.image_to_output ? 0 : count(real_tiles, g.tile_elements());
    t.input_bin_stride = bin_stride(t.input_transforms, g);
    t.filter_bin_stride = bin_stride(t.filter_transforms, g);
    t.output_bin_stride = bin_stride(t.output_transforms, g);
    // One kernel from the image to y: no input or output spectrum; the
    // output spectrum's place holds the filter spectrum channel-major instead
    // (channel_major_filter, spectral_product.hpp).
    t.input_spectrum_elements = t.image_to_output ? 0 : count(g.freq_bins(), t.input_bin_stride);
    t.filter_spectrum_elements = holds_filter && !t.slot_ordered_filter ? count(g.freq_bins(), t.filter_bin_stride) : 0;
    t.output_spectrum_elements =
        t.image_to_output ? count(g.freq_bins(), p.out_channels) : count(g.freq_bins(), t.output_bin_stride);
    return t;
}

// Where each intermediate lives in the workspace (laid out for the largest
// pass; every pass of a call uses the same places). float/float2 on the
// fused path, double/double2 on the cuFFT path.
struct pipeline_buffers {
    void* real;             // real tiles: padded filters, then input tiles, then output tiles
    void* input_spectrum;
    void* filter_spectrum;  // the workspace's; null when a filter_spectrum object brings its own
    void* output_spectrum;
    void* fft_work;
};

// Hands out the intermediates laid out by `t` in a workspace at `base`.
pipeline_buffers buffers_in(const workspace_layout& t, void* base);

// The cuFFT plans of a pass on the cuFFT path: each writes (or reads) its
// spectrum bin-major, transform n's bin f at f * transforms + n.
fft_transform_key filter_transform_key(const workspace_layout& t);
fft_transform_key input_transform_key(const workspace_layout& t);
fft_transform_key output_transform_key(const workspace_layout& t);

// Bytes of workspace one pass laid out as `t` needs (on the cuFFT path this
// makes and caches the pass's cuFFT plans, whose work area comes last).
std::size_t workspace_bytes(engine& e, const workspace_layout& t);

}  // namespace fftconv::detail
