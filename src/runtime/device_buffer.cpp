// src/runtime/device_buffer.cpp — device allocations that name what they are for.
#include <algorithm>
#include <string>

#include "fftconv/detail/runtime/device_buffer.hpp"
#include "fftconv/status.hpp"

namespace fftconv::detail {

device_buffer allocate_device(std::size_t bytes, const char* what, const workspace_allocator& allocator,
                              cudaStream_t stream) {
    const std::size_t asked = std::max<std::size_t>(bytes, 1);
    if (!allocator.is_default()) {
        if (allocator.deallocate == nullptr)
            throw error(status::invalid_argument, "fftconv: the workspace allocator has no deallocate callback");
        void* p = allocator.allocate(allocator.state, asked, stream);
        if (p == nullptr)
            throw error(status::out_of_memory, std::string("fftconv: the workspace allocator returned no memory for ") +
                                                   std::to_string(bytes) + " bytes of " + what);
        return device_buffer(p, device_free{allocator, asked, stream});
    }
    void* p = nullptr;
    const cudaError_t code = cudaMalloc(&p, asked);
    if (code != cudaSuccess) {
        (void)cudaGetLastError();  // clear the (non-sticky) allocation error we caused
        throw error(code == cudaErrorMemoryAllocation ? status::out_of_memory : status::cuda_error,
                    std::string("fftconv: allocating ") + std::to_string(bytes) + " bytes for " +
                        what + " failed: " + cudaGetErrorName(code) + " (" +
                        cudaGetErrorString(code) + ")");
    }
    return device_buffer(p);
}

}  // namespace fftconv::detail
