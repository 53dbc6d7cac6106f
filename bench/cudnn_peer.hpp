// bench/cudnn_peer.hpp — cuDNN strict FP32 (CUDNN_FMA_MATH: no TF32) on the
// same problem: the algorithm its heuristics pick in deterministic mode (what
// PyTorch runs with deterministic=True, benchmark=False) and the fastest
// algorithm cudnnFindConvolutionForwardAlgorithm measures.
#pragma once

#include <memory>
#include <vector>

#include "fftconv/problem.hpp"
#include "peer.hpp"

namespace fftconv::bench {

// True when the bench was built with cuDNN.
bool cudnn_available();

// Runs both cuDNN peers on device buffers x, w (inputs) and y (output),
// checking each against `exact` (host, float64). Empty without cuDNN.
std::vector<algorithm_result> run_cudnn_peers(const problem& p, const float* x, const float* w,
                                              float* y, const std::vector<double>& exact,
                                              int repetitions, const l2_flusher* flusher,
                                              cudaStream_t stream);

}  // namespace fftconv::bench
