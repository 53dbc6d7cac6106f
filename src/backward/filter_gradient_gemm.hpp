// src/backward/filter_gradient_gemm.hpp — the filter gradient of a convolution with
// kernels up to 40 per axis by one complex GEMM per frequency bin (and group)
// over the positions of gradient_positions.hpp:
//   dW[o][c] = sum over positions q of X_c[q] conj(D_o[q]),
// X_c[q] the spectrum of input channel c's window of padded x at q, D_o[q]
// that of output channel o's dy block, both transformed straight from x and
// dy by the fused 64- or 32-point transforms (no rearranged copies); then one
// inverse transform per (o, c), cropped to Kh x Kw and written into dw. Positions go in chunks
// whose spectra fit a budget, summed in double over chunks.
#pragma once

#include <cstddef>

#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Whether this path takes `p`: kernels up to 40 per axis, and the gradient's
// spectrum (one Cin/groups x Cout matrix per bin) within a GiB.
// `budget`: the most bytes the chunk's spectra and the gradient's spectrum
// may each take (the context's workspace limit caps it: src/api/backward.cpp).
inline constexpr std::int64_t default_gradient_budget = std::int64_t{1} << 30;
bool fits_filter_gradient_gemm(const problem& p, std::int64_t budget = default_gradient_budget);

// The grid the path takes for `p`: 32 or 64 points per axis (a cost model
// where both fit; host code, no CUDA calls).
int filter_gradient_gemm_grid(const problem& p);

// Scratch bytes the path needs (the chunk's spectra and the gradient's).
std::size_t filter_gradient_gemm_scratch(const problem& p, std::int64_t budget = default_gradient_budget);

// The filter gradient dw [Cout][Cin/groups][Kh][Kw] of `p` from x and dy
// (dense tensors on e's device), on e's stream; taps that see only padding
// hold rounding noise (the caller zeroes them: has_unseen_taps). `scratch`
// holds filter_gradient_gemm_scratch(p, budget) bytes.
void filter_gradient_gemm(engine& e, const problem& p, const float* x, const float* dy, float* dw, void* scratch,
                          std::int64_t budget = default_gradient_budget);

}  // namespace fftconv::detail
