// src/pointer_check.cpp — what a pointer is, asked of the CUDA runtime and driver.
#include <cstdint>
#include <cstdio>
#include <string>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fftconv/detail/check.hpp"
#include "fftconv/detail/engine.hpp"
#include "fftconv/detail/pointer_check.hpp"

namespace fftconv::detail {
namespace {

std::string address(const void* p) {
    char text[32];
    std::snprintf(text, sizeof text, "%p", p);
    return text;
}

// cuMemGetAddressRange through the runtime's driver entry point: the library
// need not link libcuda. Null where the driver does not offer it.
using address_range_fn = CUresult (*)(CUdeviceptr*, std::size_t*, CUdeviceptr);

address_range_fn address_range() {
    static const address_range_fn fn = [] {
        void* found = nullptr;
        cudaDriverEntryPointQueryResult result{};
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &found, 12000, cudaEnableDefault,
                                             &result) != cudaSuccess ||
            result != cudaDriverEntryPointSuccess) {
            (void)cudaGetLastError();
            return address_range_fn{};
        }
        return reinterpret_cast<address_range_fn>(found);
    }();
    return fn;
}

// Whether the driver knows an allocation holding `p` (unknown: true).
bool mapped(const void* p) {
    const address_range_fn range = address_range();
    if (range == nullptr) return true;
    CUdeviceptr base = 0;
    std::size_t size = 0;
    return range(&base, &size, CUdeviceptr(reinterpret_cast<std::uintptr_t>(p))) == CUDA_SUCCESS;
}

}  // namespace

void require_device_memory(const void* p, std::size_t bytes, int device, const char* name) {
    cudaPointerAttributes attributes{};
    const cudaError_t code = cudaPointerGetAttributes(&attributes, p);
    if (code != cudaSuccess) {
        (void)cudaGetLastError();  // ours: the query's own error is not sticky
        throw_invalid(std::string("fftconv: ") + name + " = " + address(p) +
                      " is not memory CUDA knows: " + cudaGetErrorName(code));
    }
    switch (attributes.type) {
        case cudaMemoryTypeUnregistered:
            throw_invalid(std::string("fftconv: ") + name + " = " + address(p) +
                          " is host memory; fftconv needs device memory (cudaMalloc) of device " +
                          std::to_string(device));
        case cudaMemoryTypeHost:
            throw_invalid(std::string("fftconv: ") + name + " = " + address(p) +
                          " is page-locked host memory; fftconv needs device memory (cudaMalloc) of device " +
                          std::to_string(device));
        case cudaMemoryTypeDevice:
            if (attributes.device != device)
                throw_invalid(std::string("fftconv: ") + name + " = " + address(p) +
                              " is memory of CUDA device " + std::to_string(attributes.device) +
                              ", but the context runs on device " + std::to_string(device));
            break;
        case cudaMemoryTypeManaged: break;
    }
    // The last byte the problem reads or writes must lie in memory the driver
    // mapped (this buffer or, in a pool, a neighbour: both are safe to touch).
    if (bytes > 0 && !mapped(static_cast<const char*>(p) + (bytes - 1)))
        throw_invalid(std::string("fftconv: ") + name + " = " + address(p) + " is too small: the problem needs " +
                      std::to_string(bytes) + " bytes from it, but its allocation ends earlier");
}

void check_operands(engine& e, const problem& p, const float* x, const float* w, const float* bias, const float* y) {
    e.begin_call();
    validate(p);
    if (x == nullptr) throw_invalid("fftconv: x is a null pointer");
    if (y == nullptr) throw_invalid("fftconv: y is a null pointer");
    require_device_memory(x, sizeof(float) * std::size_t(p.input_elements()), e.device(), "x");
    if (w != nullptr) require_device_memory(w, sizeof(float) * std::size_t(p.filter_elements()), e.device(), "w");
    if (bias != nullptr)
        require_device_memory(bias, sizeof(float) * std::size_t(p.out_channels), e.device(), "bias");
    require_device_memory(y, sizeof(float) * std::size_t(p.output_elements()), e.device(), "y");
}

}  // namespace fftconv::detail
