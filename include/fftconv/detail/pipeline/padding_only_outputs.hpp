// fftconv/detail/pipeline/padding_only_outputs.hpp — the outputs whose window lies
// wholly in the zero padding (possible when padding >= kernel on an axis).
//
// Their exact value is the bias (or 0), but a transform computes them as a
// sum of rounding errors of everything else in their tile: on positive inputs
// with many channels that is ~1e-3 absolute, above the elementwise bar where
// the exact value is 0. So after the passes they are written exactly.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// How many output rows at the top (and, padding being symmetric, at the
// bottom) see only padding rows; the same for columns with the width.
constexpr std::int64_t padding_only_lines(std::int64_t padding, std::int64_t kernel) {
    return padding >= kernel ? padding - kernel + 1 : 0;
}

constexpr bool has_padding_only_outputs(const problem& p) {
    return padding_only_lines(p.padding.height, p.kernel.height) > 0 ||
           padding_only_lines(p.padding.width, p.kernel.width) > 0;
}

// Writes bias[o] (0 without a bias) to every padding-only output of the
// dense y [batch][out_channels][out_height][out_width], on `stream`. Nothing
// when there are none. Instantiated for float, __nv_bfloat16 and __half.
template <activation_element E>
void write_padding_only_outputs(const problem& p, const float* bias, E* y, cudaStream_t stream);

}  // namespace fftconv::detail
