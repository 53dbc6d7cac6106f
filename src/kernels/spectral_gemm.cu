// src/kernels/spectral_gemm.cu — the library's spectral GEMM: spectral_gemm_pays and
// spectral_gemm, the dynamic-channel instantiation of the kernel (one for
// every channel count, compiled once here). Interface and the product it
// computes: include/fftconv/detail/kernels/spectral_gemm.hpp; the kernel, how it
// works and why: include/fftconv/detail/kernels/spectral_gemm.cuh, whose
// spectral_gemm_static<C> other translation units instantiate for a
// compile-time channel count.
#include "fftconv/detail/kernels/spectral_gemm.cuh"

#include "fftconv/detail/kernels/spectral_gemm.hpp"

namespace fftconv::detail {

// Where the mma.sync kernel beats cublasCgemmStridedBatched (FP32) on the
// H200, on full ranges and on the halves [0, C/2), [C/2, C) the pipeline
// makes (docs/performance.md): at least 32 rows (fewer pad to the smallest
// row tile, 32), at least 16 input channels (8 are a single k-step), and
// more than 32 output channels in the range (the 64-channel CTA computes
// half padding below).
bool spectral_gemm_pays(const spectral_gemm_args& a) {
    return a.rows >= 32 && a.in_channels >= 16 && a.last_out - a.first_out > 32;
}

void spectral_gemm(const spectral_gemm_args& a, cudaStream_t stream) { spectral_gemm_static<0>(a, stream); }

}  // namespace fftconv::detail
