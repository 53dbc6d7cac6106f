// src/tiling/pass_schedule.cpp — splitting a problem into passes that fit the workspace.
#include <algorithm>
#include <climits>
#include <string>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/tiling/pass_schedule.hpp"

namespace fftconv::detail {
namespace {

// A lower bound of the device bytes a pass of `shape` needs (all but the
// cuFFT work area, which only its cuFFT plan knows), or 1e300 ("never fits")
// when its GEMM would not fit cuBLAS's 32-bit dimensions or its counts are
// beyond any device's memory. Doubles: extreme problems must not wrap.
double pass_bytes_lower_bound(const problem& p, int tile_extent, const pass_shape& shape, bool holds_filter) {
    const workspace_layout t = make_layout(pass_problem(p, tile_extent, shape, 0, 0, 0), tile_extent, holds_filter);
    const bool gemm = !t.image_to_output;  // the fused depthwise kernel runs no GEMM
    if (t.beyond_memory || (gemm && t.gemm_rows > INT_MAX)) return 1e300;
    const double spectra = double(t.geometry.complex_bytes()) *
                           (double(t.input_spectrum_elements) + double(t.output_spectrum_elements) +
                            double(t.filter_spectrum_elements));
    return spectra + double(t.geometry.real_bytes()) * double(t.real_elements);
}

// Exact bytes: the layout of the largest pass plus the largest cuFFT work
// area any pass's cuFFT plans need (made and cached here).
std::size_t pass_workspace(engine& e, const problem& p, int tile_extent, const pass_shape& shape,
                           bool holds_filter) {
    const workspace_layout full = make_layout(pass_problem(p, tile_extent, shape, 0, 0, 0), tile_extent, holds_filter);
    const std::size_t bytes = workspace_bytes(e, full);
    if (full.geometry.fused() || full.image_to_output) return bytes;  // no cuFFT work area
    // The last pass along an axis can be smaller: its cuFFT plans differ.
    const problem last = pass_problem(p, tile_extent, shape, (p.batch - 1) / shape.batch * shape.batch,
                                      (tile_rows_of(p, tile_extent) - 1) / shape.tile_rows * shape.tile_rows,
                                      (p.out_channels - 1) / shape.out_channels * shape.out_channels);
    const workspace_layout lt = make_layout(last, tile_extent, holds_filter);
    return std::max(bytes, full.fft_work_offset() + (workspace_bytes(e, lt) - lt.fft_work_offset()));
}

}  // namespace

pass_schedule schedule_passes(engine& e, const problem& p, int tile_extent, bool holds_filter) {
    const std::int64_t tiles_high = tile_rows_of(p, tile_extent);
    const pass_shape whole{p.batch, tiles_high, p.out_channels};
    auto finish = [&](pass_shape shape, std::size_t bytes) {
        return pass_schedule{shape, make_layout(pass_problem(p, tile_extent, shape, 0, 0, 0), tile_extent, holds_filter),
                         bytes};
    };
    const double whole_lower = pass_bytes_lower_bound(p, tile_extent, whole, holds_filter);
    const std::size_t held = std::min(e.workspace_limit, e.workspace_capacity());
    if (whole_lower <= double(held)) {
        const std::size_t bytes = pass_workspace(e, p, tile_extent, whole, holds_filter);
        if (bytes <= held) return finish(whole, bytes);
    }
    const std::size_t usable = e.usable_workspace();
    if (whole_lower <= double(usable)) {
        const std::size_t bytes = pass_workspace(e, p, tile_extent, whole, holds_filter);
        if (bytes <= usable) return finish(whole, bytes);
    }
    double budget = double(usable);
    for (int attempt = 0; attempt < 64; ++attempt) {
        auto fits = [&](pass_shape shape) {
            return pass_bytes_lower_bound(p, tile_extent, shape, holds_filter) <= budget;
        };
        pass_shape shape{0, 0, 0};
        if (const auto n = largest_fitting(p.batch, [&](std::int64_t v) { return fits({v, tiles_high, p.out_channels}); }))
            shape = {n, tiles_high, p.out_channels};
        else if (const auto r = largest_fitting(tiles_high, [&](std::int64_t v) { return fits({1, v, p.out_channels}); }))
            shape = {1, r, p.out_channels};
        else if (const auto o = largest_fitting(p.out_channels, [&](std::int64_t v) { return fits({1, 1, v}); })) {
            // With o channels a pass may still take more than one row of
            // tiles or sample (a depthwise pass's workspace is its filters alone).
            if (const auto n = largest_fitting(p.batch, [&](std::int64_t v) { return fits({v, tiles_high, o}); }))
                shape = {n, tiles_high, o};
            else
                shape = {1, largest_fitting(tiles_high, [&](std::int64_t v) { return fits({1, v, o}); }), o};
        }
        if (shape.batch == 0) break;
        const std::size_t bytes = pass_workspace(e, p, tile_extent, shape, holds_filter);
        if (bytes <= usable) return finish(shape, bytes);
        budget = budget * 0.75;  // the cuFFT work area did not fit beside it: smaller passes
    }
    if (e.capturing())
        refuse_during_capture("problem " + to_string(p) + " needs more workspace than the context holds (" +
                              std::to_string(e.workspace_capacity()) + " bytes)");
    const pass_shape smallest{1, 1, 1};
    const workspace_layout t = make_layout(pass_problem(p, tile_extent, smallest, 0, 0, 0), tile_extent, holds_filter);
    const std::string needed =
        t.beyond_memory ? "more memory than any device has"
        : !t.image_to_output && t.gemm_rows > INT_MAX
            ? "a GEMM of " + std::to_string(t.gemm_rows) + " rows (cuBLAS takes at most 2^31 - 1)"
            : "more than " +
                  std::to_string((unsigned long long)pass_bytes_lower_bound(p, tile_extent, smallest, holds_filter)) +
                  " bytes of workspace";
    throw error(status::out_of_memory,
                "fftconv: problem " + to_string(p) + " with tile extent " + std::to_string(tile_extent) + " needs " +
                    needed +
                    " even for its smallest pass (one sample, one row of tiles, one output channel), but only " +
                    std::to_string(usable) +
                    " bytes are usable (the context's workspace limit, or the device's free memory)");
}

pass_schedule prepare(engine& e, const problem& p, int tile_extent, bool holds_filter) {
    const pass_schedule schedule = schedule_passes(e, p, tile_extent, holds_filter);
    (void)e.workspace(schedule.workspace);
    if (!has_fused_fft(tile_extent) && !schedule.layout.image_to_output)
        for_each_pass(p, tile_extent, schedule.shape, [&](const problem& q, auto...) {
            const workspace_layout t = make_layout(q, tile_extent, holds_filter);
            (void)e.transform_for(input_transform_key(t));
            (void)e.transform_for(output_transform_key(t));
            if (holds_filter) (void)e.transform_for(filter_transform_key(t));
        });
    return schedule;
}

}  // namespace fftconv::detail
