// fftconv/detail/kernels/spectral_gemm.hpp — the per-bin complex GEMM of the
// overlap-save pipeline on the tensor cores, at FP32 accuracy.
//
// For every frequency bin f in [0, bins), output channel o in
// [first_out, last_out) and GEMM row (tile) m in [0, rows):
//
//   output[f*output_bin_stride + o*rows + m] =
//       sum_{c < in_channels} input[f*input_bin_stride + c*rows + m]
//                             * conj(filter[f*filter_bin_stride + c*out_channels + o])
//
// i.e. the layouts of workspace_layout.hpp: input spectrum [bin][in_channel][row],
// filter spectrum [bin][in_channel][out_channel], output spectrum
// [bin][out_channel][row]. Output channels outside [first_out, last_out) are
// neither read nor written, so the pipeline can run the two output halves as
// two calls. This is the same product as
// cublasCgemmStridedBatched(N, C, rows, last_out - first_out, in_channels, ...)
// in spectral_product.cpp's multiply_spectra.
//
// How (spectral_gemm.cuh: the kernel and its launch path, as templates;
// src/kernels/spectral_gemm.cu defines the two functions below): mma.sync TF32 with
// every FP32 operand split into a TF32 "big" part and a TF32 "small"
// remainder (3 products: big*big, big*small, small*big); each 8-deep k-step's
// products start from zero inside the tensor core and are added to FP32
// accumulators outside it, which keeps the tensor core's truncating
// accumulation away from the long sums (its error then measures below
// cuBLAS's FP32 CGEMM; see the test).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>
#include <vector_types.h>

namespace fftconv::detail {

struct spectral_gemm_args {
    const float2* input;   // [bin][in_channel][row]
    const float2* filter;  // [bin][in_channel][out_channel]
    float2* output;        // [bin][out_channel][row]
    std::int64_t rows;          // M: GEMM rows (tiles) per bin, >= 1
    std::int64_t in_channels;   // K, >= 1
    std::int64_t out_channels;  // the filter's row length (all output channels), >= last_out
    std::int64_t first_out;     // output channels [first_out, last_out) are computed
    std::int64_t last_out;
    std::int64_t bins;
    std::int64_t input_bin_stride;   // elements between bins; >= in_channels * rows
    std::int64_t filter_bin_stride;  // >= in_channels * out_channels
    std::int64_t output_bin_stride;  // >= last_out * rows (the output holds channels up to last_out)
};

// True where the mma.sync kernel (spectral_gemm_warp_level) is faster than
// cublasCgemmStridedBatched (FP32) on the H200; the rule and its reasons are
// at its definition in src/kernels/spectral_gemm.cu. Host-only, no CUDA
// calls (plans use it). Where the wgmma kernel runs, the forward product
// asks warpgroup_spectral_gemm_pays instead.
bool spectral_gemm_pays(const spectral_gemm_args& args);

// Enqueues the product on `stream`. Any shape: rows, channels and the output
// range need not be multiples of anything, and any alignment of the pointers
// and strides to whole elements (8 bytes) is accepted (16-byte copies are
// used where the layout allows them). Throws fftconv::error (through
// FFTCONV_CUDA_TRY / FFTCONV_CHECK_LAUNCH) on a launch failure and
// throw_invalid on arguments out of range. Needs compute capability >= 8.0.
// For a channel count fixed at compile time, spectral_gemm_static<C>
// (spectral_gemm.cuh, from .cu files) computes the same, bit for bit.
void spectral_gemm(const spectral_gemm_args& args, cudaStream_t stream);

}  // namespace fftconv::detail
