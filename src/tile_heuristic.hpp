// src/tile_heuristic.hpp — the FFT path's cost model (src/tile_heuristic.cpp),
// for the dispatch to weigh the direct depthwise kernel against
// (src/dispatch_table.cu). choose_tile_extent (fftconv/dispatch.hpp) picks
// the extent that minimises it.
#pragma once

#include "fftconv/problem.hpp"

namespace fftconv::detail {

// The FFT path's predicted time for `p` at `tile_extent`, in seconds.
double estimated_seconds(const problem& p, int tile_extent);

}  // namespace fftconv::detail
