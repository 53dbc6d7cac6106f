// fftconv/detail/kernels/element_access.cuh — reading and writing activations
// of any element type as float: half values widen exactly, floats round to
// nearest even as they are stored (fftconv/element_type.hpp).
#pragma once

#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fftconv/element_type.hpp"

namespace fftconv::detail {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }

template <activation_element E>
__device__ __forceinline__ E from_float(float v) {
    if constexpr (std::same_as<E, float>) return v;
    else if constexpr (std::same_as<E, __nv_bfloat16>) return __float2bfloat16_rn(v);
    else return __float2half_rn(v);
}

// A load cached in L1 and L2 (__ldca), and a write-back store (__stwb): the
// fused transforms' access pattern. A load returns the element's bits
// (`stored`: float, or the 16 bits of a half) and widen() makes them a float
// afterwards: a caller loads a whole batch before it widens any, so that the
// batch is in flight at once (a conversion next to its load would stall the
// warp on that load before the next one issues).
template <activation_element E>
using stored = std::conditional_t<std::same_as<E, float>, float, unsigned short>;

template <activation_element E>
__device__ __forceinline__ stored<E> load_cached(const E* at) {
    if constexpr (std::same_as<E, float>) return __ldca(at);
    else return __ldca(reinterpret_cast<const unsigned short*>(at));
}
template <activation_element E>
__device__ __forceinline__ float widen(stored<E> bits) {
    if constexpr (std::same_as<E, float>) return bits;
    else if constexpr (std::same_as<E, __nv_bfloat16>) return __uint_as_float(unsigned(bits) << 16);
    else return __half2float(__ushort_as_half(bits));
}
template <activation_element E>
__device__ __forceinline__ void store_write_back(E* at, float v) {
    __stwb(at, from_float<E>(v));
}

}  // namespace fftconv::detail
