// fftconv/dispatch.hpp — which code path a problem takes. Host-only, needs no GPU.
//
// The library is built with a table of compiled configurations
// (kernel_extent, channels, tile_extent), each a specialisation with its
// geometry fixed at compile time. A problem whose kernel extent equals an
// entry's and whose in and out channels both equal the entry's channels runs
// that entry (the first such, in table order). Every other valid problem runs
// the generic path: the same algorithm with runtime geometry and a tile extent
// from choose_tile_extent().
#pragma once

#include <span>

#include "fftconv/config.hpp"
#include "fftconv/problem.hpp"

namespace fftconv {

enum class path_kind {
    compiled,  // a compiled configuration (geometry fixed at compile time)
    generic,   // the FFT pipeline with runtime geometry
};

// "compiled", "generic"
const char* to_string(path_kind k) noexcept;

struct dispatch_decision {
    path_kind path = path_kind::generic;
    tile_config config{};  // generic: channels = 0 and the chosen tile_extent

    friend constexpr bool operator==(const dispatch_decision&, const dispatch_decision&) = default;
};

// The configurations compiled into this build, in table order.
std::span<const tile_config> compiled_configs() noexcept;

// Validates `p`, then picks its path. forced_tile_extent > 0 skips the table
// and runs the generic path with that tile extent (it must be >= kernel_extent).
dispatch_decision choose_dispatch(const problem& p, int forced_tile_extent = 0);

// The generic path's tile extent for `p` (validated): the cuFFT-friendly
// extent (2^a 3^b 5^c 7^d, >= kernel_extent) that minimises a cost model of
// the whole pipeline. src/tile_heuristic.cpp explains the model.
int choose_tile_extent(const problem& p);

}  // namespace fftconv
