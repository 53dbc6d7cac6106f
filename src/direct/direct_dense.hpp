// src/direct/direct_dense.hpp — dense and grouped convolution without
// transforms, for problems so small that the FFT path's four launches (two
// transforms, the spectral product, the inverse) cost more than the
// arithmetic: one kernel, each output a sum of products read from shared
// memory. The router (src/dispatch/router.cpp) takes it where its cost
// model beats the FFT path's; the depthwise problems have their own direct
// kernels (direct_depthwise.hpp).
#pragma once

#include <cstdint>

#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Kernels larger than this per axis are never small problems: a block's
// staged input rows and one input channel's filters stay within 48 KiB.
inline constexpr std::int64_t max_direct_dense_kernel = 32;

// Whether the dense kernel takes `p`: not depthwise (more than one input
// channel per group, or one group), kernels up to max_direct_dense_kernel,
// and a grid within CUDA's limits (batch and channel blocks below 2^16).
bool fits_direct_dense(const problem& p);

// Its predicted time for a problem that fits (the same units as
// dispatch/cost_model.hpp's estimate of the FFT path).
double direct_dense_seconds(const problem& p);

// y = conv2d(x, w) + bias for a problem that fits; bias may be null; x and
// y float, __nv_bfloat16 or __half (FP32 arithmetic, one rounding out).
// Needs no workspace; one launch on e.stream(). outputs_per_thread: 0, the
// cost model's choice; or 1, 2, 4 or 8 output channels a thread (tests run
// each).
template <activation_element E>
void direct_dense(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y,
                  int outputs_per_thread = 0);

}  // namespace fftconv::detail
