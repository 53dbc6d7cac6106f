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

// How a launch divides the work: output channels a thread (1, 2, 4 or 8)
// and slices of a block that split the input channels (1, 2 or 4).
struct direct_dense_shape {
    int outputs_per_thread = 1, slices = 1;
};

// The cost model (the same units as dispatch/cost_model.hpp's estimate of
// the FFT path) for a problem that fits: a shape's predicted time, its
// cheapest shape, and that shape's time.
double direct_dense_seconds(const problem& p, direct_dense_shape shape);
direct_dense_shape direct_dense_choice(const problem& p);
double direct_dense_seconds(const problem& p);

// y = conv2d(x, w) + bias for a problem that fits; bias may be null; x and
// y float, __nv_bfloat16 or __half (FP32 arithmetic, one rounding out).
// Needs no workspace; one launch on e.stream(), of the given shape (tests
// run each) or the cost model's.
template <activation_element E>
void direct_dense(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y,
                  direct_dense_shape shape);
template <activation_element E>
void direct_dense(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y) {
    direct_dense(e, p, x, w, bias, y, direct_dense_choice(p));
}

}  // namespace fftconv::detail
