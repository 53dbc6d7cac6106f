// bench/cudnn_peer.hpp — cuDNN strict FP32 (CUDNN_FMA_MATH: no TF32) on the
// same problem: the algorithm its heuristics pick in deterministic mode (what
// PyTorch runs with deterministic=True, benchmark=False) and the fastest
// algorithm cudnnFindConvolutionForwardAlgorithm measures. With half
// activations (--element), the forward peers take bfloat16 or float16
// tensors (x, w, bias, y: cuDNN's convolutions take one data type) with FP32
// compute (CUDNN_DATA_FLOAT), tensor cores allowed (their products of half
// values are exact, their sums FP32): what a half-precision network runs.
#pragma once

#include <memory>
#include <vector>

#include "fftconv/problem.hpp"
#include "peer.hpp"
#include "report.hpp"

namespace fftconv::bench {

// True when the bench was built with cuDNN.
bool cudnn_available();

// Runs both cuDNN peers on device buffers x, w, bias (inputs; bias
// out_channels elements, or null for none) and y (output), all of `element`
// (float32: floats), checking each against `exact` (host, float64, bias
// included; for a half element computed on the widened x, w and bias). The
// whole operator: padding, groups, rectangular kernels, and the bias as a
// cudnnAddTensor after the convolution, timed as part of the call. A
// configuration cuDNN refuses gives rows that say so. Empty without cuDNN.
std::vector<algorithm_result> run_cudnn_peers(const problem& p, element_type element, const void* x,
                                              const void* w, const void* bias, void* y,
                                              const std::vector<double>& exact, int repetitions,
                                              const l2_flusher* flusher, cudaStream_t stream);

// The same peers for a gradient of the problem (no bias): dx =
// cudnnConvolutionBackwardData(w, dy) or dw = cudnnConvolutionBackwardFilter(x,
// dy), into `out`, checked against `exact` (host, float64). The fastest peer
// is the strict-FP32 algorithm cuDNN's own search (cudnnFind...) ranks first.
std::vector<algorithm_result> run_cudnn_gradient_peers(const problem& p, pass g, const float* x, const float* w,
                                                       const float* dy, float* out,
                                                       const std::vector<double>& exact, int repetitions,
                                                       const l2_flusher* flusher, cudaStream_t stream);

}  // namespace fftconv::bench
