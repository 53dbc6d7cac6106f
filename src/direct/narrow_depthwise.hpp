// src/direct/narrow_depthwise.hpp — depthwise convolution of narrow images (input
// and output rows at most max_narrow_width wide: the 7 x 7 and 14 x 14 stages
// of RepLKNet-style networks, whatever the kernel) without transforms: a
// thread holds one output row, one input row and the filter row between them
// in registers, so that every product of the two rows is a multiply-add at a
// compile-time register index. One of the two kernels of the direct path
// (direct_depthwise.hpp chooses by their cost models).
#pragma once

#include <cstdint>

#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

inline constexpr std::int64_t max_narrow_width = 24;
inline constexpr std::int64_t max_narrow_kernel_height = 64;

// Whether the narrow kernel takes `p`: depthwise (one input channel per
// group), input and output widths at most max_narrow_width, kernels at most
// max_narrow_kernel_height tall (an output is a float sum over that many
// row sums at most), and a block's staged planes and filters within its
// shared memory.
bool fits_narrow_depthwise(const problem& p);

// Its predicted time for a problem that fits.
double narrow_depthwise_seconds(const problem& p);

// y = conv2d(x, w, bias) for a problem that fits; bias may be null; x and y
// float, __nv_bfloat16 or __half. Needs no workspace; runs on e.stream().
template <activation_element E>
void narrow_depthwise(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y);

}  // namespace fftconv::detail
