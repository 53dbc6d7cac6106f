// src/backward/depthwise_filter_gradient.hpp — the filter gradient of a convolution
// with one input channel per group (depthwise, with any channel multiplier)
// in three kernels, with only partial sums of spectra in device memory: no
// channel contraction, so no GEMM and no rearranged operands.
//
// dw[o][u][v] = sum_b sum_i,j dy[b][o][i][j] xpad[b][c][i + u][j + v], c the
// output channel's input channel. Cut the outputs (i, j) into blocks of
// (64 - Kh + 1) x (64 - Kw + 1) (gradient_operands.hpp, filter_blocks_of):
// each block's correlation with its 64 x 64 window of xpad has no circular
// wrap on a 64-point grid, so
//   dw = IFFT( sum over samples and blocks of X conj(D) ),
// X the window's spectrum, D the dy block's. Two windows share one complex
// FFT, and two dy blocks another (the halves split off by Hermitian
// symmetry), the products are summed in registers, and one inverse per
// channel crops to Kh x Kw. Taps that see only padding are written as exact
// zeros.
#pragma once

#include <cstddef>

#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Whether the fused path takes `p`: one input channel per group and both
// kernel extents at most 40 (blocks of at least 25 outputs on a 64-point tile).
bool fits_depthwise_filter_gradient(const problem& p);

// Scratch the path needs (the partial sums of the spectra).
// `budget`: the most bytes of partial sums a launch may take (the
// context's workspace limit caps it: src/api/backward.cpp).
std::size_t depthwise_filter_gradient_scratch(const problem& p, std::int64_t budget = std::int64_t{1} << 30);

// dw of `p` from x and dy (dense tensors on e's device), on e's stream;
// `scratch` holds depthwise_filter_gradient_scratch(p, budget) bytes.
void depthwise_filter_gradient(engine& e, const problem& p, const float* x, const float* dy, float* dw,
                               void* scratch, std::int64_t budget = std::int64_t{1} << 30);

}  // namespace fftconv::detail
