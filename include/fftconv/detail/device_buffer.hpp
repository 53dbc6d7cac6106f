// fftconv/detail/device_buffer.hpp — owning device memory (rule of zero).
#pragma once

#include <cstddef>
#include <memory>

#include <cuda_runtime_api.h>

namespace fftconv::detail {

struct device_free {
    void operator()(void* p) const noexcept { (void)cudaFree(p); }
};
using device_buffer = std::unique_ptr<void, device_free>;

// Allocates `bytes` of device memory; throws status::out_of_memory naming `what`.
device_buffer allocate_device(std::size_t bytes, const char* what);

}  // namespace fftconv::detail
