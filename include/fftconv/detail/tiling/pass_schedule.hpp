// fftconv/detail/tiling/pass_schedule.hpp — how a problem is split into passes that
// each fit the workspace the context may use, and the preparation (cuFFT plans,
// workspace) a call needs before its first launch.
//
// Passes take `batch` samples at a time first; when one sample is too large,
// a band of `tile_rows` rows of tiles; when one row of tiles is still too
// large, `out_channels` output channels at a time. One pass covering the
// whole problem is the common case. Every pass sees x and y through their
// strides, so the passes write y exactly where one pass would, with the same
// tiles.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "fftconv/detail/tiling/workspace_layout.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

struct pass_shape {
    std::int64_t batch;
    std::int64_t tile_rows;
    std::int64_t out_channels;

    friend constexpr bool operator==(const pass_shape&, const pass_shape&) = default;
};

// Rows of tiles along the height of `p`'s output.
constexpr std::int64_t tile_rows_of(const problem& p, int tile_extent) {
    return ceil_div(p.out_height(), tile_outputs_of(p, tile_extent).high);
}

// The extents of the pass that starts at sample `batch_first`, tile row
// `tile_row_first` and output channel `out_first` (the last pass along each
// axis may be smaller). A pass spans the whole width, and keeps the image's
// width and padding; a pass over the whole height keeps its height and
// padding too (so a tile may still cover the padded image: tile_outputs_of).
// A band of tile rows is the unpadded problem whose output is the band's:
// its padding lives in where the pass reads its input (the image view of
// pipeline.cuh), not in the pass problem.
constexpr problem pass_problem(const problem& p, int tile_extent, const pass_shape& pass,
                               std::int64_t batch_first, std::int64_t tile_row_first, std::int64_t out_first) {
    const std::int64_t out_tile = tile_outputs_of(p, tile_extent).high;
    problem q = p;
    q.batch = std::min(pass.batch, p.batch - batch_first);
    q.out_channels = std::min(pass.out_channels, p.out_channels - out_first);
    const std::int64_t first_row = tile_row_first * out_tile;
    const std::int64_t out_rows = std::min(pass.tile_rows * out_tile, p.out_height() - first_row);
    if (out_rows < p.out_height()) {
        q.padding.height = 0;
        q.height = out_rows + p.kernel.height - 1;
    }
    return q;
}

// Calls f(pass problem, first sample, first tile row, first output channel,
// first pass of these output channels) for every pass of `shape`, in order.
template <class F>
void for_each_pass(const problem& p, int tile_extent, const pass_shape& shape, F&& f) {
    const std::int64_t tiles_high = tile_rows_of(p, tile_extent);
    for (std::int64_t o0 = 0; o0 < p.out_channels; o0 += shape.out_channels) {
        bool first = true;
        for (std::int64_t b0 = 0; b0 < p.batch; b0 += shape.batch)
            for (std::int64_t r0 = 0; r0 < tiles_high; r0 += shape.tile_rows) {
                f(pass_problem(p, tile_extent, shape, b0, r0, o0), b0, r0, o0, first);
                first = false;
            }
    }
}

// How many passes a problem takes and the workspace they need together.
struct pass_schedule {
    pass_shape shape;
    workspace_layout layout;  // of the largest pass: it lays out the workspace
    std::size_t workspace;    // bytes, the cuFFT work area included
};

// The largest v in [1, hi] with fits(v), or 0 when not even 1 fits (fits is
// monotone: true up to some v, false after).
template <class F>
std::int64_t largest_fitting(std::int64_t hi, F&& fits) {
    std::int64_t lo = 0;
    while (lo < hi) {
        const std::int64_t mid = lo + (hi - lo + 1) / 2;
        if (fits(mid)) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// Splits `p` into passes that fit the workspace the engine may use. The
// device's free memory is asked only when the workspace would have to grow.
// Throws out_of_memory (or, while capturing, invalid_argument) when not even
// the smallest pass fits.
pass_schedule schedule_passes(engine& e, const problem& p, int tile_extent, bool holds_filter);

// Everything a call on `p` will need, made now: the passes, the workspace,
// every cuFFT plan. Returns the schedule.
pass_schedule prepare(engine& e, const problem& p, int tile_extent, bool holds_filter);

}  // namespace fftconv::detail
