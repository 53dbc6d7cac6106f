// fftconv/detail/kernels/warpgroup_spectral_gemm.hpp — the spectral GEMM
// (spectral_gemm.hpp: the same product, arguments and accuracy scheme) on
// Hopper's warpgroup tensor-core instructions (wgmma), for sm_90 devices.
//
// Why a second kernel: the mma.sync kernel (spectral_gemm.cuh) issues several
// instructions per tensor-core operation (operand splits, fragment loads of
// both operands, the FP32 adds) and keeps the tensor pipe about half busy.
// wgmma reads the input operand straight from shared memory for a 64-row
// warpgroup tile, so a CTA splits each input element once (not once per
// warp) and a warp issues one wgmma where it issued an mma.sync per 8 rows
// (seven at 56 rows).
//
// Built only where the library is compiled for sm_90 (its machine code is
// sm_90a: wgmma is an architecture-specific feature); elsewhere, and on
// other devices, warpgroup_spectral_gemm_runs says false and the caller uses
// the mma.sync kernel.
#pragma once

#include <cuda_runtime_api.h>

#include "fftconv/detail/kernels/spectral_gemm.hpp"

namespace fftconv::detail {

// True where warpgroup_spectral_gemm can run `args` on the current device:
// the library holds sm_90a code, the device is compute capability 9.0, and
// the work fits one launch. Throws fftconv::error if the device query fails.
bool warpgroup_spectral_gemm_runs(const spectral_gemm_args& args);

// Where warpgroup_spectral_gemm_runs, whether the wgmma kernel beats
// cublasCgemmStridedBatched (FP32) on the H200: ranges of more than 32
// output channels from 32 input channels, at any row count (the rule's
// measurements at its definition). Host-only, no CUDA calls.
bool warpgroup_spectral_gemm_pays(const spectral_gemm_args& args);

// Enqueues the product of spectral_gemm.hpp on `stream`, for any shape the
// arguments allow (check_spectral_gemm_args' ranges), any output range and
// any 8-byte alignment. Only where warpgroup_spectral_gemm_runs(args).
void warpgroup_spectral_gemm(const spectral_gemm_args& args, cudaStream_t stream);

}  // namespace fftconv::detail
