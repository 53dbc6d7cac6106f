// fftconv/detail/kernels/tf32_split.cuh — one FP32 value as two TF32 tensor-core
// operands, big + small (the 3xTF32 scheme of Ootomo & Yokota 2022), for both
// spectral GEMM kernels (spectral_gemm.cuh on mma.sync, warpgroup_spectral_gemm.cu
// on wgmma). Include from .cu files only (nvcc).
#pragma once

#include <cstdint>

namespace fftconv::detail {

// The two operands as bit patterns, as the mma instructions take them.
struct tf32_pair {
    std::uint32_t big;
    std::uint32_t small;
};

// big: x rounded to nearest to TF32's 10 mantissa bits (cvt.rn.tf32.f32 on
// sm_90; cvt.rna, ties away from zero, before it). small: the exact remainder
// x - big; the tensor core ignores the low 13 bits of a TF32 operand
// (truncation), so adding half of that ulp first turns the truncation into
// round-to-nearest — without it the dropped bits bias every product toward
// zero.
// Non-finite values: the conversion keeps NaN and Inf, so the products carry
// them (the remainder of a non-finite x is NaN and may round to zero; big
// carries it). The conversion, not an integer add of half a TF32 ulp and a
// mask: that carries the GPU's NaN (0x7fffffff) into the sign bit and leaves
// -0, so a NaN in x would give finite outputs; the conversion is also fewer
// instructions.
__device__ __forceinline__ tf32_pair split_tf32(float x) {
    constexpr std::uint32_t half_ulp = 0x1000u;
    std::uint32_t big;
#if __CUDA_ARCH__ >= 900
    asm("cvt.rn.tf32.f32 %0, %1;" : "=r"(big) : "f"(x));
#else
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(big) : "f"(x));
#endif
    const float remainder = x - __uint_as_float(big);
    return {big, __float_as_uint(remainder) + half_ulp};
}

}  // namespace fftconv::detail
