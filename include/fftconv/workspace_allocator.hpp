// fftconv/workspace_allocator.hpp — where a context takes its device memory.
//
// By default a context allocates its workspace with cudaMalloc. A framework
// with its own caching allocator (PyTorch's, say) hands the context one of
// these instead, so that the framework's memory statistics and limits see
// fftconv's workspace and its cache can reuse the memory.
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include <cstddef>

#include <cuda_runtime_api.h>

namespace fftconv {

struct workspace_allocator {
    // Device memory of at least `bytes` on the context's device, usable by
    // work on `stream` (the context's stream when the call allocates); null
    // when it cannot (the call then fails with status::out_of_memory).
    void* (*allocate)(void* state, std::size_t bytes, cudaStream_t stream) = nullptr;
    // Gives back what `allocate` returned, with the same `bytes` and
    // `stream`. Called only once no work of the context uses it any more.
    void (*deallocate)(void* state, void* pointer, std::size_t bytes, cudaStream_t stream) = nullptr;
    void* state = nullptr;

    // Null callbacks: cudaMalloc and cudaFree.
    bool is_default() const noexcept { return allocate == nullptr; }
};

}  // namespace fftconv
