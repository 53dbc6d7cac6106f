// fftconv/detail/pipeline/specialized_pipeline.hpp — the entry points of one
// configuration's pipeline, declared for every tile_config, and the
// vocabulary of the compiled table: one class per configuration, the table a
// list of them. Their definitions (fftconv/specialize.cuh) instantiate the
// whole pipeline with geometry_of<Cfg>; the library's own configurations are
// instantiated explicitly, one translation unit each
// (src/dispatch/compiled_entry.cu.in), and declared extern in
// fftconv/compiled_configs.hpp, so no other code compiles them again.
//
// Plain C++ (no Boost): users' nvcc compiles this through specialize.cuh.
// The library's host code views the same list as a Boost.Hana sequence
// (src/dispatch/compiled_sequence.hpp).
#pragma once

#include <array>
#include <vector>

#include "fftconv/config.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

class engine;
struct activations;
struct filter_input;

template <tile_config Cfg>
void run_specialized(engine& e, const problem& p, const activations& io, const filter_input& filter,
                     const float* bias);

template <tile_config Cfg>
void transform_specialized(engine& e, const problem& p, const float* w, void* spectrum);

template <tile_config Cfg>
std::vector<const void*> specialized_kernels();

// One compiled configuration, as a type: config<K, C, T> is dense (groups 1),
// config<K, C, T, true> depthwise (groups C).
template <int KernelExtent, int Channels, int TileExtent, bool Depthwise = false>
struct config {
    static constexpr tile_config value{KernelExtent, Channels, TileExtent, Depthwise};
};

// A table of them, in dispatch order (the first that fits a problem runs it).
template <class... Configs>
struct config_list {
    static constexpr std::array<tile_config, sizeof...(Configs)> table{{Configs::value...}};
};

// The explicit instantiation of configuration Cfg's three entry points, or
// (prefix `extern`) its declaration: FFTCONV_SPECIALIZED_PIPELINE(extern, Cfg)
// in fftconv/compiled_configs.hpp, FFTCONV_SPECIALIZED_PIPELINE(, Cfg) in the
// configuration's own translation unit. A macro because explicit
// instantiations are declarations: no template or Hana algorithm can emit
// one per element of a list, so each entry needs its line, and this keeps
// the signatures above written once.
#define FFTCONV_SPECIALIZED_PIPELINE(prefix, ...)                                                              \
    prefix template void run_specialized<__VA_ARGS__>(engine&, const problem&, const activations&,              \
                                                      const filter_input&, const float*);                      \
    prefix template void transform_specialized<__VA_ARGS__>(engine&, const problem&, const float*, void*);       \
    prefix template std::vector<const void*> specialized_kernels<__VA_ARGS__>()

}  // namespace fftconv::detail
