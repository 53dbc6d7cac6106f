// src/direct/direct_depthwise.hpp — depthwise convolution without transforms, for
// the problems where the FFT path's tiles would be mostly padding: small
// images and small kernels (the 7 x 7 K = 13 stage of a RepLKNet, K <= 7 of
// ConvNeXt and MobileNet blocks). Two kernels: the planes kernel here (any
// width, every tap times every output: small kernels) and the narrow kernel
// (narrow_depthwise.hpp: rows up to 24 wide, only the products that meet
// the image: large kernels on small images); their cost models pick one.
// The router (src/dispatch/router.cpp) takes the direct path when one fits
// and its cost model beats the FFT path's (src/dispatch/cost_model.cpp); the
// plan says so (path_kind::direct).
#pragma once

#include <cstdint>

#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Whether a direct kernel takes `p`: depthwise (one input channel per
// group), and either the planes kernel fits (kernels up to
// max_direct_kernel per axis: its float sums, one per kernel column, then
// one over the columns; one padded input plane plus its filter within the
// block's shared memory) or the narrow one does (fits_narrow_depthwise).
bool fits_direct_depthwise(const problem& p);

// Which kernel runs a problem that fits: the narrow one where it fits and
// its cost model beats the planes kernel's (or only it fits).
enum class direct_kernel { planes, narrow };
direct_kernel direct_kernel_for(const problem& p);

// The direct kernel's predicted time for `p` (fits_direct_depthwise), for the
// dispatch to weigh against the FFT path's (dispatch/cost_model.hpp).
double direct_depthwise_seconds(const problem& p);

// y = conv2d(x, w, bias) for a problem that fits; bias may be null; x and y
// float, __nv_bfloat16 or __half. Needs no workspace; runs on e.stream().
template <activation_element E>
void direct_depthwise(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y);

inline constexpr std::int64_t max_direct_kernel = 64;

}  // namespace fftconv::detail
