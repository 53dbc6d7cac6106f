// fftconv/specialize.cuh — compile your own configuration.
//
// Include this from one of your .cu files to instantiate the pipeline for a
// tile_config the library was not built with; its geometry is then fixed at
// compile time in your binary:
//
//   #include <fftconv/specialize.cuh>
//   constexpr fftconv::tile_config my_shape{24, 96, 48};   // K, channels, T
//   fftconv::conv2d<my_shape>(ctx, problem, x, w, y);
//
// The problem's kernel extent must equal Cfg.kernel_extent and both channel
// counts must equal Cfg.channels; anything else throws invalid_argument.
#pragma once

#include <string>

#include "fftconv/context.hpp"
#include "fftconv/detail/check.hpp"
#include "fftconv/detail/pipeline.cuh"
#include "fftconv/detail/pointer_check.hpp"

namespace fftconv {

template <tile_config Cfg>
void conv2d(context& ctx, const problem& p, const float* x, const float* w, float* y) {
    validate(p);
    if (p.kernel_extent != Cfg.kernel_extent || p.in_channels != Cfg.channels ||
        p.out_channels != Cfg.channels)
        detail::throw_invalid("fftconv: problem " + to_string(p) +
                              " does not fit the configuration kernel_extent=" +
                              std::to_string(Cfg.kernel_extent) + " channels=" +
                              std::to_string(Cfg.channels));
    if (w == nullptr) detail::throw_invalid("fftconv: w is a null pointer");
    detail::check_operands(ctx.engine(), p, x, w, y);
    detail::run_pipeline(ctx.engine(), p, tile_geometry<Cfg>{}, x, detail::filter_input{w, {}}, y);
}

}  // namespace fftconv
