// python/src/context_cache.hpp — one fftconv::context per (CUDA device,
// stream), made on first use and kept: a context owns cuFFT plans and a
// workspace that later calls on the same device and stream reuse, and a
// context must not be shared by two streams at once (one workspace).
// Callers hold the GIL, which serialises every use of the cache.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "fftconv/context.hpp"

namespace fftconv::python {

// Makes `device` current for its lifetime and restores the caller's device
// after (the producer's framework keeps its own notion of the current device).
class device_guard {
public:
    explicit device_guard(int device);
    ~device_guard();
    device_guard(const device_guard&) = delete;
    device_guard& operator=(const device_guard&) = delete;

private:
    int previous_ = 0;
    bool restore_ = false;
};

// Throws fftconv::error(cuda_error) naming why, when no CUDA device can be
// used (none visible, no driver), or when `device` is out of range.
void require_device(int device);

// The number of visible CUDA devices; 0 when the runtime cannot find any.
int device_count() noexcept;

class context_cache {
public:
    // The context for (device, stream), made on first use. `device` must be
    // current (device_guard) when it is called.
    context& get(int device, std::uintptr_t stream);
    // Frees every context (and its workspace and plans).
    void clear() noexcept;
    std::size_t size() const noexcept { return contexts_.size(); }

private:
    std::map<std::pair<int, std::uintptr_t>, std::unique_ptr<context>> contexts_;
};

// The process's cache. Never destroyed by a static destructor (the CUDA
// runtime may be gone by then); the Python package clears it at exit.
context_cache& contexts();

}  // namespace fftconv::python
