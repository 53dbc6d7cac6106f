// src/filter_gradient_gemm.hpp — the filter gradient of a convolution with
// kernels up to 40 per axis by one complex GEMM per frequency bin (and group)
// over the positions of gradient_positions.hpp:
//   dW[c][o] = sum over positions q of X_c[q] conj(D_o[q]),
// X_c[q] the spectrum of input channel c's window of padded x at q, D_o[q]
// that of output channel o's dy block, both transformed straight from x and
// dy by the fused 64- or 32-point transforms (no rearranged copies); then one
// inverse transform per (c, o), cropped to Kh x Kw. Positions go in chunks
// whose spectra fit a budget, the GEMM accumulating over chunks.
#pragma once

#include <cstddef>

#include "fftconv/detail/engine.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Whether this path takes `p`: kernels up to 40 per axis, and the gradient's
// spectrum (one Cin/groups x Cout matrix per bin) within a GiB.
bool fits_filter_gradient_gemm(const problem& p);

// Scratch bytes the path needs (the chunk's spectra and the gradient's).
std::size_t filter_gradient_gemm_scratch(const problem& p);

// The filter gradient of `p` from x and dy (dense tensors on e's device),
// transposed within each group: transposed[c][o][u][v] = dw[o][c][u][v]
// (c the input channel within o's group), on e's stream. `scratch` holds
// filter_gradient_gemm_scratch(p) bytes.
void filter_gradient_gemm(engine& e, const problem& p, const float* x, const float* dy, float* transposed,
                          void* scratch);

}  // namespace fftconv::detail
