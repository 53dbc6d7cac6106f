// src/runtime/pointer_check.cpp — what a pointer is, asked of the CUDA runtime and driver.
#include <cstdint>
#include <cstdio>
#include <string>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/runtime/pointer_check.hpp"

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

// The bytes from `p` to the end of the allocation the driver knows holding
// it (unknown: the largest size).
std::size_t bytes_to_allocation_end(const void* p) {
    const address_range_fn range = address_range();
    const auto at = CUdeviceptr(reinterpret_cast<std::uintptr_t>(p));
    CUdeviceptr base = 0;
    std::size_t size = 0;
    if (range == nullptr || range(&base, &size, at) != CUDA_SUCCESS) return SIZE_MAX;
    return std::size_t(base + size - at);
}

}  // namespace

void require_device_memory(const void* p, std::size_t bytes, std::size_t alignment, int device, const char* name) {
    if (reinterpret_cast<std::uintptr_t>(p) % alignment != 0)
        throw_invalid(std::string("fftconv: ") + name + " = " + address(p) + " is not aligned to its elements' " +
                      std::to_string(alignment) + " bytes");
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
    // Every byte the problem reads or writes lies in p's own allocation.
    const std::size_t available = bytes_to_allocation_end(p);
    if (bytes > available)
        throw_invalid(std::string("fftconv: ") + name + " = " + address(p) + " is too small: the problem needs " +
                      std::to_string(bytes) + " bytes from it, but its allocation ends " +
                      std::to_string(available) + " bytes after it");
}

void require_disjoint(const void* out, std::size_t out_bytes, const char* out_name, const void* in,
                      std::size_t in_bytes, const char* in_name) {
    if (in == nullptr || out == nullptr) return;
    const auto o = reinterpret_cast<std::uintptr_t>(out), i = reinterpret_cast<std::uintptr_t>(in);
    if (o < i + in_bytes && i < o + out_bytes)
        throw_invalid(std::string("fftconv: ") + out_name + " = " + address(out) + " (" + std::to_string(out_bytes) +
                      " bytes) overlaps " + in_name + " = " + address(in) + " (" + std::to_string(in_bytes) +
                      " bytes): the output must not share memory with an input");
}

void check_operands(engine& e, const problem& p, const activations& io, const float* w, const float* bias) {
    e.begin_call();
    validate(p);
    const void* x = io.in;
    const void* y = io.out;
    if (x == nullptr) throw_invalid("fftconv: x is a null pointer");
    if (y == nullptr) throw_invalid("fftconv: y is a null pointer");
    const std::size_t element = element_bytes(io.type);
    const std::size_t x_bytes = element * std::size_t(p.input_elements());
    require_device_memory(x, x_bytes, element, e.device(), "x");
    if (w != nullptr)
        require_device_memory(w, sizeof(float) * std::size_t(p.filter_elements()), sizeof(float), e.device(), "w");
    if (bias != nullptr)
        require_device_memory(bias, sizeof(float) * std::size_t(p.out_channels), sizeof(float), e.device(), "bias");
    const std::size_t y_bytes = element * std::size_t(p.output_elements());
    require_device_memory(y, y_bytes, element, e.device(), "y");
    require_disjoint(y, y_bytes, "y", x, x_bytes, "x");
    require_disjoint(y, y_bytes, "y", w, sizeof(float) * std::size_t(p.filter_elements()), "w");
    require_disjoint(y, y_bytes, "y", bias, sizeof(float) * std::size_t(p.out_channels), "bias");
}

}  // namespace fftconv::detail
