// src/dispatch/router.cpp — the route of every call (router.hpp).
#include <algorithm>
#include <string>

#include "backward/depthwise_filter_gradient.hpp"
#include "backward/filter_gradient_gemm.hpp"
#include "backward/gradient_operands.hpp"
#include "direct/direct_dense.hpp"
#include "direct/direct_depthwise.hpp"
#include "dispatch/compiled_table.hpp"
#include "dispatch/cost_model.hpp"
#include "dispatch/router.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {
namespace {

dispatch_decision decision(path_kind path, const problem& p, int tile_extent) {
    return {path, tile_geometry<>(int(p.kernel.height), int(p.kernel.width), p.in_channels, p.out_channels,
                                  tile_extent)};
}

// The direct path: the depthwise kernels or the dense one (each takes only its own kind of problem).
bool fits_direct(const problem& p) { return fits_direct_depthwise(p) || fits_direct_dense(p); }

}  // namespace

route find_route(std::span<const specialization> registered, const problem& p, int forced_tile_extent) {
    validate(p);
    const std::int64_t kernel = std::max(p.kernel.height, p.kernel.width);
    if (forced_tile_extent < 0 ||
        (forced_tile_extent > 0 && (forced_tile_extent < kernel || forced_tile_extent > max_forced_tile_extent)))
        throw_invalid("fftconv: forced tile extent " + std::to_string(forced_tile_extent) +
                      " must be 0 (automatic) or from the kernel's larger extent " + std::to_string(kernel) +
                      " to " + std::to_string(max_forced_tile_extent));
    // An FFT route of `tile_extent`, with the cost model's time.
    const auto fft_route = [&](const specialization* entry, path_kind path, int tile_extent) {
        return route{entry, decision(path, p, tile_extent), {}, estimated_seconds(p, tile_extent)};
    };
    if (forced_tile_extent > 0) return fft_route(nullptr, path_kind::generic, forced_tile_extent);
    for (auto it = registered.rbegin(); it != registered.rend(); ++it)
        if (matches(it->config, p)) return fft_route(&*it, path_kind::registered, it->config.tile_extent);
    for (const specialization& s : compiled_specializations())
        if (matches(s.config, p)) return fft_route(&s, path_kind::compiled, s.config.tile_extent);
    const route generic = fft_route(nullptr, path_kind::generic, choose_tile_extent(p));
    if (fits_direct(p)) {
        const direct_dense_shape shape = is_depthwise(p) ? direct_dense_shape{} : direct_dense_choice(p);
        const double seconds = is_depthwise(p) ? direct_depthwise_seconds(p) : direct_dense_seconds(p, shape);
        if (seconds < generic.modelled_seconds)
            return {nullptr, decision(path_kind::direct, p, generic.decision.geometry.tile_extent()), shape, seconds};
    }
    return generic;
}

route router::forward(const problem& p) const {
    for (const remembered& r : recent_)
        if (r.known && r.p == p) return r.r;
    const route found = find_route(registered_, p, forced_tile_extent_);
    recent_[next_recent_] = {true, p, found};
    next_recent_ = (next_recent_ + 1) % int(recent_.size());
    return found;
}

void router::forget() {
    for (remembered& r : recent_) r.known = false;
}

route router::data_gradient(const problem& p) const { return forward(data_gradient_problem(p)); }

filter_path router::filter_gradient(const problem& p, std::int64_t budget) const {
    if (fits_depthwise_filter_gradient(p)) return filter_path::depthwise;
    if (fits_filter_gradient_gemm(p, budget)) return filter_path::gemm;
    return filter_path::general;
}

route router::general_filter_gradient(const problem& p) const { return forward(filter_gradient_problem(p)); }

void router::force_tile_extent(int tile_extent) {
    if (tile_extent < 0 || tile_extent > max_forced_tile_extent)
        throw_invalid("fftconv: force_tile_extent(" + std::to_string(tile_extent) +
                      "): the tile extent must be 0 (automatic) or from 1 to " +
                      std::to_string(max_forced_tile_extent));
    forced_tile_extent_ = tile_extent;
    forget();
}

void router::add(const specialization& s) {
    if (s.run == nullptr || s.transform_filter == nullptr || s.kernels == nullptr)
        throw_invalid("fftconv: add_specialization: make the specialization with fftconv::specialize<Cfg>()");
    registered_.push_back(s);
    forget();  // the routes point into registered_, and the new entry may match them
}

}  // namespace fftconv::detail
