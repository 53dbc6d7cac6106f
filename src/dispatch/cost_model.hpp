// src/dispatch/cost_model.hpp — the FFT path's cost model (src/dispatch/cost_model.cpp),
// for the dispatch to weigh the direct depthwise kernel against
// (src/dispatch/router.cpp). choose_tile_extent (fftconv/dispatch.hpp) picks
// the extent that minimises it.
#pragma once

#include "fftconv/problem.hpp"

namespace fftconv::detail {

// The FFT path's predicted time for `p` at `tile_extent`, in seconds.
double estimated_seconds(const problem& p, int tile_extent);

}  // namespace fftconv::detail
