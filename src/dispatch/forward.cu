// src/dispatch/forward.cu — runs a forward route (forward.hpp). The generic
// pipeline (every extent a runtime value) is instantiated here.
#include <algorithm>

#include "direct/direct_dense.hpp"
#include "direct/direct_depthwise.hpp"
#include "dispatch/forward.hpp"
#include "fftconv/detail/pipeline/pipeline.cuh"

namespace fftconv::detail {

void run_forward(engine& e, const route& r, const problem& p, const activations& io, const filter_input& filter,
                 const float* bias) {
    if (r.decision.path == path_kind::direct && filter.w != nullptr) {
        with_element(io.type, [&](auto element) {
            using E = typename decltype(element)::type;
            const auto* x = static_cast<const E*>(io.in);
            auto* y = static_cast<E*>(io.out);
            if (is_depthwise(p)) direct_depthwise(e, p, x, filter.w, bias, y);
            else direct_dense(e, p, x, filter.w, bias, y, r.dense_shape);
        });
    } else if (r.entry != nullptr) {
        r.entry->run(e, p, io, filter, bias);
    } else {
        run_pipeline(e, p, r.decision.geometry, io, filter, bias);
    }
}

void transform_filter_on(engine& e, const route& r, const problem& p, const float* w, void* spectrum) {
    if (r.entry != nullptr) r.entry->transform_filter(e, p, w, spectrum);
    else transform_filter_spectrum(e, p, r.decision.geometry, w, spectrum);
}

// A call with a filter holds its spectrum in the workspace, a call through
// a filter spectrum does not: under a workspace limit the two may run in
// passes of different shapes, with cuFFT plans of their own.
std::size_t forward_workspace(engine& e, const route& r, const problem& p, filter_calls calls) {
    const int tile_extent = r.decision.geometry.tile_extent();
    const std::size_t given = schedule_passes(e, p, tile_extent, true).workspace;
    if (calls == filter_calls::given) return given;
    return std::max(given, schedule_passes(e, p, tile_extent, false).workspace);
}

void reserve_forward(engine& e, const route& r, const problem& p, filter_calls calls) {
    const int tile_extent = r.decision.geometry.tile_extent();
    // One growth to the larger of the two (growing twice would free, or keep
    // for earlier graphs, a buffer no call uses), then each kind's plans.
    (void)e.workspace(forward_workspace(e, r, p, calls));
    (void)prepare(e, p, tile_extent, true);
    if (calls == filter_calls::given_or_spectrum) (void)prepare(e, p, tile_extent, false);
}

}  // namespace fftconv::detail
