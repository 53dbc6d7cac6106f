// fftconv/detail/pipeline/specialized_pipeline.hpp — the entry points of one
// configuration's pipeline, declared for every tile_config. Their definitions
// (fftconv/specialize.cuh) instantiate the whole pipeline with
// geometry_of<Cfg>; the library's own configurations are instantiated
// explicitly, one translation unit each, and declared extern in
// fftconv/compiled_configs.hpp, so no other code compiles them again.
#pragma once

#include <vector>

#include "fftconv/config.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

class engine;
struct filter_input;

template <tile_config Cfg>
void run_specialized(engine& e, const problem& p, const float* x, const filter_input& filter, const float* bias,
                     float* y);

template <tile_config Cfg>
void transform_specialized(engine& e, const problem& p, const float* w, void* spectrum);

template <tile_config Cfg>
std::vector<const void*> specialized_kernels();

}  // namespace fftconv::detail
