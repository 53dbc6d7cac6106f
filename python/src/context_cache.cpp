#include "context_cache.hpp"

#include <string>

#include <cuda_runtime_api.h>

#include "fftconv/status.hpp"

namespace fftconv::python {

device_guard::device_guard(int device) {
    require_device(device);
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device) {
        const cudaError_t code = cudaSetDevice(device);
        if (code != cudaSuccess)
            throw error(status::cuda_error, std::string("fftconv: cudaSetDevice(") + std::to_string(device) +
                                                "): " + cudaGetErrorString(code));
        restore_ = true;
    }
}

device_guard::~device_guard() {
    if (restore_) (void)cudaSetDevice(previous_);
}

int device_count() noexcept {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return count;
}

void require_device(int device) {
    int count = 0;
    const cudaError_t code = cudaGetDeviceCount(&count);
    if (code != cudaSuccess) {
        (void)cudaGetLastError();
        throw error(status::cuda_error, std::string("fftconv: no usable CUDA device (cudaGetDeviceCount: ") +
                                            cudaGetErrorName(code) + ": " + cudaGetErrorString(code) + ")");
    }
    if (device < 0 || device >= count)
        throw error(status::cuda_error, "fftconv: CUDA device " + std::to_string(device) + " does not exist (" +
                                            std::to_string(count) + " visible)");
}

context& context_cache::get(int device, std::uintptr_t stream) {
    auto& slot = contexts_[{device, stream}];
    if (!slot) {
        try {
            slot = std::make_unique<context>(reinterpret_cast<cudaStream_t>(stream));
        } catch (...) {
            contexts_.erase({device, stream});
            throw;
        }
    }
    return *slot;
}

void context_cache::clear() noexcept { contexts_.clear(); }

context_cache& contexts() {
    static context_cache* cache = new context_cache;  // deliberately never deleted: see the header
    return *cache;
}

}  // namespace fftconv::python
