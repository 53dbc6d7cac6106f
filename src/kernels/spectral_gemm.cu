// src/kernels/spectral_gemm.cu — the library's spectral GEMM: spectral_gemm_pays and
// spectral_gemm, the dynamic-channel instantiation of the kernel (one for
// every channel count, compiled once here). Interface and the product it
// computes: include/fftconv/detail/kernels/spectral_gemm.hpp; the kernel, how it
// works and why: include/fftconv/detail/kernels/spectral_gemm.cuh, whose
// spectral_gemm_static<C> other translation units instantiate for a
// compile-time channel count.
#include "fftconv/detail/kernels/spectral_gemm.cuh"

#include "fftconv/detail/kernels/spectral_gemm.hpp"
#include "fftconv/detail/kernels/warpgroup_spectral_gemm.hpp"

namespace fftconv::detail {

// Where spectral_gemm beats cublasCgemmStridedBatched (FP32) on the H200,
// on full ranges and on the halves [0, C/2), [C/2, C) the pipeline makes
// (docs/performance.md): more than 32 output channels in the range (the
// 64-channel CTAs of both kernels compute half padding below), and for the
// mma.sync kernel at least 32 rows (fewer pad to its smallest row tile) and
// at least 16 input channels; the wgmma kernel (row tiles of 8) wins from 32
// input channels at any row count (128^2 K8 C64 B1's 26 rows: 18.4 against
// cuBLAS's 23.1 us) and loses below (16 channels: 17.8 against 16.5).
bool spectral_gemm_pays(const spectral_gemm_args& a) {
    if (a.last_out - a.first_out <= 32) return false;
    if (warpgroup_spectral_gemm_runs(a)) return a.in_channels >= 32;
    return a.rows >= 32 && a.in_channels >= 16;
}

void spectral_gemm(const spectral_gemm_args& a, cudaStream_t stream) { spectral_gemm_static<0>(a, stream); }

}  // namespace fftconv::detail
