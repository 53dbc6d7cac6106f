// src/device_buffer.cpp — device allocations that name what they are for.
#include <algorithm>
#include <string>

#include "fftconv/detail/device_buffer.hpp"
#include "fftconv/status.hpp"

namespace fftconv::detail {

device_buffer allocate_device(std::size_t bytes, const char* what) {
    void* p = nullptr;
    const cudaError_t code = cudaMalloc(&p, std::max<std::size_t>(bytes, 1));
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
