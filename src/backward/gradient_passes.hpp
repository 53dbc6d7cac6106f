// src/backward/gradient_passes.hpp — the gradients' passes that move data
// without transforming it: the rearranged operands of gradient_operands.hpp
// (out[t] = in[map.source(t)], 0 where there is none), the exact zeros of
// filter taps that see only padding, and the bias gradient (dy summed over
// samples and positions, in double).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backward/gradient_operands.hpp"
#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

void rearrange(const float* in, float* out, const flipped_filter& map, std::int64_t total, cudaStream_t stream);
// Instantiated for float, __nv_bfloat16 and __half (the data gradient's
// cropped dy has dy's element type).
template <activation_element E>
void rearrange(const E* in, E* out, const block_gather& map, std::int64_t total, cudaStream_t stream);
void rearrange(const float* in, float* out, const filter_gradient_result& map, std::int64_t total,
               cudaStream_t stream);

// dw[o][c][u][v] = 0 where tap (u, v) of `p` sees only padding (has_unseen_taps).
void zero_unseen_taps(float* dw, const problem& p, cudaStream_t stream);

// dbias[o] = the sum of dy[b][o][i][j] over b, i, j.
void sum_bias_gradient(const float* dy, float* dbias, const problem& p, cudaStream_t stream);

}  // namespace fftconv::detail
