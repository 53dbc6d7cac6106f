// fftconv/dispatch.hpp — which code path a problem takes. Host-only, needs no GPU.
//
// The library is built with a table of compiled configurations (Meson option
// `configs`, e.g. -Dconfigs=8:64:32,31:128:96:dw as kernel:channels:tile, dw
// for depthwise). Each is the pipeline instantiated for geometry_of<Cfg>: its
// kernels see K, C and T as constants. A problem whose kernel extent equals
// an entry's, whose in and out channels both equal the entry's channels and
// whose groups are 1 (or, for a depthwise entry, the channels) runs that
// entry (the first such, in table order). A context can add configurations of your own
// (context::add_specialization, fftconv/specialize.cuh); those are looked up
// first. Every other valid problem runs the generic path: the same algorithm
// with runtime geometry and the tile extent choose_tile_extent() picks —
// except a depthwise problem whose transforms would cost more than summing
// the products directly (small images, small kernels: the cost models of
// src/dispatch/cost_model.cpp and src/direct/direct_depthwise.cu decide), which runs
// the direct path.
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include <span>
#include <vector>

#include "fftconv/config.hpp"
#include "fftconv/problem.hpp"

namespace fftconv {

enum class path_kind {
    compiled,    // a configuration compiled into the library
    registered,  // a configuration of the caller's, added to the context
    generic,     // the FFT pipeline with runtime geometry
    direct,      // depthwise, no transforms: each output a sum of products (a call given a
                 // filter spectrum still runs the FFT pipeline, with `geometry`)
};

// "compiled", "registered", "generic", "direct"
const char* to_string(path_kind k) noexcept;

struct dispatch_decision {
    path_kind path = path_kind::generic;
    // The extents the call runs with: the problem's kernel extent and
    // channels, and the configuration's or the generic path's tile extent
    // (on the direct path: the tile extent of the FFT pipeline it beat, which
    // transform_filter's spectra are made for).
    tile_geometry<> geometry{};

    friend constexpr bool operator==(const dispatch_decision&, const dispatch_decision&) = default;
};

// The configurations compiled into this build, in table order.
std::span<const tile_config> compiled_configs() noexcept;

// A problem fits a configuration when its kernel is K x K with the
// configuration's K, both channel counts equal the configuration's channels
// and its groups are 1, or (a depthwise configuration) the channels
// (padding and bias are the call's, whatever the entry).
constexpr bool matches(const tile_config& c, const problem& p) {
    return p.kernel == extent2d{c.kernel_extent} && p.groups == (c.depthwise ? c.channels : 1) &&
           p.in_channels == c.channels && p.out_channels == c.channels;
}

// Validates `p`, then picks its path among the compiled configurations, the
// generic path and the direct one. forced_tile_extent > 0 skips the table and
// the direct path and runs the generic path with that tile extent (the
// kernel's larger extent <= t <= 65536).
dispatch_decision choose_dispatch(const problem& p, int forced_tile_extent = 0);

// The generic path's tile extent for `p` (validated): the cuFFT-friendly
// extent (2^a 3^b 5^c 7^d, >= the kernel's larger extent) that minimises a cost model of
// the whole pipeline. src/dispatch/cost_model.cpp explains the model.
int choose_tile_extent(const problem& p);

class context;

namespace detail {
class engine;
struct activations;  // fftconv/element_type.hpp
struct filter_input;
}  // namespace detail

// One configuration's pipeline, instantiated: what the dispatch runs for a
// problem that matches `config`. The library's own come from its build
// (compiled_configs); make your own with fftconv::specialize<Cfg>()
// (fftconv/specialize.cuh) and add it to a context.
struct specialization {
    tile_config config;
    // conv2d on this configuration: transforms filter.w, or uses a given
    // spectrum; io's x and y of any element type.
    void (*run)(detail::engine&, const problem&, const detail::activations& io, const detail::filter_input& filter,
                const float* bias);
    // The filter spectrum of w ([bin][in][out], the layout run() reads).
    void (*transform_filter)(detail::engine&, const problem&, const float* w, void* spectrum);
    // The kernels run() launches (their addresses as the instantiating
    // translation unit sees them; for the GEMM, its launcher): lets a test
    // check which code ran against the engine's launch log. Not stable API.
    std::vector<const void*> (*kernels)();
};

}  // namespace fftconv
