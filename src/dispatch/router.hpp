// src/dispatch/router.hpp — which code runs each call of a context: the
// forward convolution, its data gradient and its filter gradient. The
// context owns one router (its forced tile extent and the specializations
// added to it); context::plan() asks it, and so does every call.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "direct/direct_dense.hpp"
#include "fftconv/dispatch.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Forced tile extents above this are refused: a tuning aid needs no more, and
// 65536^2-point tiles are already 16 GiB each.
inline constexpr int max_forced_tile_extent = 1 << 16;

// What runs a forward problem: a specialization (registered or compiled), or
// (entry null) the generic or the direct path, with `decision.geometry`; on
// the direct path for a dense problem, the launch's shape (chosen once with
// the route, not at every call); and the cost model's time for the call.
struct route {
    const specialization* entry;
    dispatch_decision decision;
    direct_dense_shape dense_shape{};
    double modelled_seconds = 0;
};

// Validates `p` and `forced_tile_extent`, then looks in `registered` (latest
// first), then in the compiled table, unless a tile extent is forced; else
// the generic path's tile extent, or the direct path where its cost model
// beats the FFT pipeline's.
route find_route(std::span<const specialization> registered, const problem& p, int forced_tile_extent);

// The three ways the filter gradient runs (src/api/backward.cpp): the fused
// depthwise sum, the per-bin GEMM, or the forward pipeline on rearranged
// operands (the general form).
enum class filter_path { depthwise, gemm, general };

class router {
public:
    // find_route's answer, remembered for the last few problems: a steady
    // state of repeated calls pays no search of the tables and cost models.
    route forward(const problem& p) const;
    // The data gradient is a forward convolution (gradient_operands.hpp).
    route data_gradient(const problem& p) const;
    // `budget`: the bytes one of the fused paths' intermediates may take.
    filter_path filter_gradient(const problem& p, std::int64_t budget) const;
    // The forward route of the general filter gradient's convolution.
    route general_filter_gradient(const problem& p) const;

    // 0: automatic; else every forward problem runs the generic path with
    // this tile extent (validated here).
    void force_tile_extent(int tile_extent);
    int forced_tile_extent() const noexcept { return forced_tile_extent_; }
    // Searched before the compiled table, the latest added first.
    void add(const specialization& s);

private:
    void forget();  // what changes a route: the forced tile extent, an added specialization

    int forced_tile_extent_ = 0;
    std::vector<specialization> registered_;
    struct remembered {
        bool known = false;
        problem p;
        route r;
    };
    mutable std::array<remembered, 8> recent_{};  // a context is used by one thread at a time
    mutable int next_recent_ = 0;
};

}  // namespace fftconv::detail
