#include "half_io.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"

namespace fftconv::bench {
namespace {

constexpr unsigned threads = 256;

unsigned blocks_for(std::int64_t work) {
    return unsigned(std::clamp<std::int64_t>((work + threads - 1) / threads, 1, 65536));
}

using detail::from_float;
using detail::to_float;

template <class E>
__global__ void round_in_place_kernel(float* x, E* rounded, std::int64_t n) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
         i += std::int64_t{gridDim.x} * blockDim.x) {
        const E r = from_float<E>(x[i]);
        rounded[i] = r;
        x[i] = to_float(r);
    }
}

// Eight elements a step: one 16-byte load of E, two of float (cudaMalloc'd
// buffers are 256-byte aligned); the last n mod 8 one at a time.
template <class E>
__global__ void widen_kernel(const E* __restrict__ in, float* __restrict__ out, std::int64_t n) {
    const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
    const std::int64_t first = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
    const std::int64_t octets = n / 8;
    for (std::int64_t i = first; i < octets; i += stride) {
        const uint4 packed = reinterpret_cast<const uint4*>(in)[i];
        E v[8];
        std::memcpy(v, &packed, sizeof packed);
        reinterpret_cast<float4*>(out)[2 * i] = make_float4(to_float(v[0]), to_float(v[1]), to_float(v[2]), to_float(v[3]));
        reinterpret_cast<float4*>(out)[2 * i + 1] =
            make_float4(to_float(v[4]), to_float(v[5]), to_float(v[6]), to_float(v[7]));
    }
    for (std::int64_t i = 8 * octets + first; i < n; i += stride) out[i] = to_float(in[i]);
}

template <class E>
__global__ void narrow_kernel(const float* __restrict__ in, E* __restrict__ out, std::int64_t n) {
    const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
    const std::int64_t first = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x;
    const std::int64_t octets = n / 8;
    for (std::int64_t i = first; i < octets; i += stride) {
        const float4 a = reinterpret_cast<const float4*>(in)[2 * i];
        const float4 b = reinterpret_cast<const float4*>(in)[2 * i + 1];
        const E v[8] = {from_float<E>(a.x), from_float<E>(a.y), from_float<E>(a.z), from_float<E>(a.w),
                        from_float<E>(b.x), from_float<E>(b.y), from_float<E>(b.z), from_float<E>(b.w)};
        uint4 packed;
        std::memcpy(&packed, v, sizeof packed);
        reinterpret_cast<uint4*>(out)[i] = packed;
    }
    for (std::int64_t i = 8 * octets + first; i < n; i += stride) out[i] = from_float<E>(in[i]);
}

// f(tag) with the C++ type of a half `type`.
template <class F>
void with_half(element_type type, F&& f) {
    if (type == element_type::bfloat16) f(__nv_bfloat16{});
    else f(__half{});
}

}  // namespace

reference::device_array<char> make_activations(element_type type, std::int64_t n) {
    return reference::make_device_array<char>(std::max<std::int64_t>(1, n) * std::int64_t(element_bytes(type)));
}

void round_in_place(element_type type, float* x, void* rounded, std::int64_t n, cudaStream_t stream) {
    if (type == element_type::float32 || n == 0) return;
    with_half(type, [&](auto tag) {
        using E = decltype(tag);
        round_in_place_kernel<E><<<blocks_for(n), threads, 0, stream>>>(x, static_cast<E*>(rounded), n);
    });
    FFTCONV_CHECK_LAUNCH();
}

// in -> out, n elements: a copy where both are float, else launch(tag) with
// the C++ type of the half `type`.
template <class Launch>
void convert(element_type type, const void* in, void* out, std::int64_t n, cudaStream_t stream, Launch&& launch) {
    if (n == 0) return;
    if (type == element_type::float32) {
        FFTCONV_CUDA_TRY(cudaMemcpyAsync(out, in, sizeof(float) * std::size_t(n), cudaMemcpyDeviceToDevice, stream));
        return;
    }
    with_half(type, launch);
    FFTCONV_CHECK_LAUNCH();
}

void widen(element_type type, const void* in, float* out, std::int64_t n, cudaStream_t stream) {
    convert(type, in, out, n, stream, [&](auto tag) {
        using E = decltype(tag);
        widen_kernel<E><<<blocks_for(n / 8 + 1), threads, 0, stream>>>(static_cast<const E*>(in), out, n);
    });
}

void narrow(element_type type, const float* in, void* out, std::int64_t n, cudaStream_t stream) {
    convert(type, in, out, n, stream, [&](auto tag) {
        using E = decltype(tag);
        narrow_kernel<E><<<blocks_for(n / 8 + 1), threads, 0, stream>>>(in, static_cast<E*>(out), n);
    });
}

void poison(element_type type, void* device, std::int64_t n, cudaStream_t stream) {
    FFTCONV_CUDA_TRY(cudaMemsetAsync(device, 0xff, element_bytes(type) * std::size_t(n), stream));
}

std::vector<float> widened_to_host(element_type type, const void* device, std::int64_t n) {
    if (type == element_type::float32) return reference::to_host(static_cast<const float*>(device), n);
    auto widened = reference::make_device_array<float>(std::max<std::int64_t>(1, n));
    widen(type, device, widened.data(), n, nullptr);
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    return reference::to_host(widened.data(), n);
}

}  // namespace fftconv::bench
