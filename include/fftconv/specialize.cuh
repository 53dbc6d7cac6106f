// fftconv/specialize.cuh — compile your own configuration.
//
// Include this from one of your .cu files to instantiate the pipeline for a
// tile_config the library was not built with; its kernels then see the
// kernel extent, the channel count and the tile extent as constants:
//
//   #include <fftconv/specialize.cuh>
//   constexpr fftconv::tile_config my_shape{24, 96, 48};   // K, channels, T
//
//   // Either call it directly ...
//   fftconv::conv2d<my_shape>(ctx, problem, x, w, y);
//   // ... or add it to a context: every call on that context whose problem
//   // matches it (dispatch.hpp, matches) runs it, transform_filter included.
//   ctx.add_specialization(fftconv::specialize<my_shape>());
//
// The configurations the library was built with (compiled_configs.hpp) are
// declared extern there: including this header does not compile them again.
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

// The kernels copy with cp.async and reduce with warp reductions: compute
// capability 8.0 and newer. nvcc's default target is older.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
#error "fftconv/specialize.cuh: the pipeline's kernels need compute capability 8.0 or newer: compile for sm_80 or later (nvcc -gencode=arch=compute_90,code=sm_90; CMake: set CMAKE_CUDA_ARCHITECTURES, e.g. 90)"
#endif

#include <string>
#include <vector>

#include "fftconv/compiled_configs.hpp"
#include "fftconv/context.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/pipeline/pipeline.cuh"
#include "fftconv/detail/runtime/pointer_check.hpp"
#include "fftconv/detail/pipeline/specialized_pipeline.hpp"

namespace fftconv {
namespace detail {

template <tile_config Cfg>
void run_specialized(engine& e, const problem& p, const activations& io, const filter_input& filter,
                     const float* bias) {
    run_pipeline<Cfg.depthwise>(e, p, geometry_of<Cfg>{}, io, filter, bias);
}

template <tile_config Cfg>
void transform_specialized(engine& e, const problem& p, const float* w, void* spectrum) {
    transform_filter_spectrum(e, p, geometry_of<Cfg>{}, w, spectrum);
}

template <tile_config Cfg>
std::vector<const void*> specialized_kernels() {
    using G = geometry_of<Cfg>;
    if constexpr (Cfg.depthwise && has_fused_depthwise(Cfg.tile_extent)) {
        // The filter transform and the one kernel per tile pair (its variant
        // for pairs that span samples, and the other; float activations').
        const void* filter = nullptr;
        if constexpr (has_fused_fft(Cfg.tile_extent))
            filter = reinterpret_cast<const void*>(forward_tiles<G, filter_tiles<G>>);
        else
            filter = reinterpret_cast<const void*>(filter_dft<G, slot_order_sink>);
        return {filter, reinterpret_cast<const void*>(depthwise_tiles<G, false, float>),
                reinterpret_cast<const void*>(depthwise_tiles<G, true, float>)};
    } else if constexpr (has_fused_fft(Cfg.tile_extent))
        return {reinterpret_cast<const void*>(forward_tiles<G, image_tiles<G>>),
                reinterpret_cast<const void*>(forward_tiles<G, filter_tiles<G>>),
                reinterpret_cast<const void*>(inverse_tiles<G>),
                reinterpret_cast<const void*>(spectral_gemm_for<G>())};
    else
        return {reinterpret_cast<const void*>(pad_filters<G, double>),
                reinterpret_cast<const void*>(gather_tiles<G, double>),
                reinterpret_cast<const void*>(scatter_tiles<G, double>)};
}

}  // namespace detail

// The configuration Cfg as a specialization a context can dispatch to
// (context::add_specialization).
template <tile_config Cfg>
specialization specialize() {
    return {Cfg, &detail::run_specialized<Cfg>, &detail::transform_specialized<Cfg>,
            &detail::specialized_kernels<Cfg>};
}

// y = conv2d(x, w) with Cfg, whatever the context's dispatch would pick (x
// and y float, __nv_bfloat16 or __half, as context::conv2d takes them). The
// problem must match Cfg (fftconv/dispatch.hpp, matches): a square kernel of
// Cfg.kernel_extent, both channel counts Cfg.channels, groups 1 (or, for a
// depthwise Cfg, Cfg.channels; padding is the call's); anything else throws
// invalid_argument.
template <tile_config Cfg, activation_element E>
void conv2d(context& ctx, const problem& p, const E* x, const float* w, E* y) {
    validate(p);
    if (!matches(Cfg, p))
        detail::throw_invalid("fftconv: problem " + to_string(p) +
                              " does not fit the configuration kernel_extent=" +
                              std::to_string(Cfg.kernel_extent) + " channels=" +
                              std::to_string(Cfg.channels) +
                              (Cfg.depthwise ? " depthwise" : "") +
                              " (it takes square kernels of that extent, both channel counts equal to it, groups " +
                              (Cfg.depthwise ? "equal to it)" : "1)"));
    if (w == nullptr) detail::throw_invalid("fftconv: w is a null pointer");
    const detail::activations io = detail::activations_of(x, y);
    detail::check_operands(ctx.engine(), p, io, w, nullptr);
    detail::run_specialized<Cfg>(ctx.engine(), p, io, detail::filter_input{w, {}}, nullptr);
}

}  // namespace fftconv
