// fftconv/detail/runtime/device_buffer.hpp — owning device memory (rule of zero).
#pragma once

#include <cstddef>
#include <memory>

#include <cuda_runtime_api.h>

#include "fftconv/workspace_allocator.hpp"

namespace fftconv::detail {

// Frees through the allocator the memory came from (cudaFree by default).
struct device_free {
    workspace_allocator allocator{};
    std::size_t bytes = 0;
    cudaStream_t stream = nullptr;
    void operator()(void* p) const noexcept {
        if (allocator.is_default()) (void)cudaFree(p);
        else allocator.deallocate(allocator.state, p, bytes, stream);
    }
};
using device_buffer = std::unique_ptr<void, device_free>;

// Allocates `bytes` of device memory from `allocator` (for work on
// `stream`); throws status::out_of_memory naming `what`.
device_buffer allocate_device(std::size_t bytes, const char* what, const workspace_allocator& allocator = {},
                              cudaStream_t stream = nullptr);

}  // namespace fftconv::detail
