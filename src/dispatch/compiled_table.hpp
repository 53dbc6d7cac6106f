// src/dispatch/compiled_table.hpp — the compiled configurations as runnable
// specializations, and the one lookup that maps a problem to the code that
// runs it.
#pragma once

#include <span>

#include "fftconv/config.hpp"
#include "fftconv/dispatch.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Forced tile extents above this are refused: a tuning aid needs no more, and
// 65536^2-point tiles are already 16 GiB each.
inline constexpr int max_forced_tile_extent = 1 << 16;

// The library's compiled configurations (compiled_table), in table order.
std::span<const specialization> compiled_specializations() noexcept;

// What runs a problem: a specialization (registered or compiled), or the
// generic path (entry null) with `decision.geometry`.
struct route {
    const specialization* entry;
    dispatch_decision decision;
};

// Validates `p` and `forced_tile_extent`, then looks in `registered` (latest
// first), then in the compiled table, unless a tile extent is forced.
route find_route(std::span<const specialization> registered, const problem& p, int forced_tile_extent);

}  // namespace fftconv::detail
