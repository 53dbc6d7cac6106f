// python/src/context_cache.hpp — the fftconv::context objects the Python
// module uses: one per (CUDA device, stream), made on first use. A context
// owns cuFFT plans and a workspace that later calls on the same device and
// stream reuse, and must not be shared by two streams at once (one
// workspace).
//
// Bounded: at most `capacity()` contexts per device (default 8). Making one
// more evicts that device's least recently used context (its destructor
// waits for its work), so a program that makes a stream per step does not
// grow without bound. A context that was used while its stream was being
// captured into a CUDA graph is pinned (never evicted: the graph reads its
// workspace) until clear() or release().
//
// Settings that apply to every context of a device, present and future:
// the workspace limit and the workspace allocator (PyTorch's caching
// allocator, see module.cpp).
//
// Threads: every use of the cache or of one of its contexts, the context's
// work included, holds the cache's mutex (lock()). module.cpp takes it only
// after releasing the GIL, and touches no Python object while it holds it.
// The GIL alone would not do: a context's workspace allocator calls back
// into Python (PyTorch's caching allocator), taking the GIL itself, and
// Python may release it there, letting another thread in mid-call. No
// thread waits for the mutex while holding the GIL, so the callback's wait
// for the GIL cannot deadlock against one.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "fftconv/context.hpp"

#if __has_include("fftconv/workspace_allocator.hpp")
#define FFTCONV_PYTHON_HAS_ALLOCATOR 1
#endif

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

// Whether `stream` is being captured into a CUDA graph (the legacy stream 0
// is never asked: it cannot be captured).
bool is_capturing(std::uintptr_t stream);

class context_cache {
public:
    // Held for every use of the cache and of its contexts (see above).
    [[nodiscard]] std::unique_lock<std::mutex> lock() { return std::unique_lock(mutex_); }

    // The context for (device, stream), made on first use. `device` must be
    // current (device_guard) when it is called. A stream being captured
    // gets no new context (making one allocates): that throws
    // invalid_argument saying what to do.
    context& get(int device, std::uintptr_t stream);
    bool contains(int device, std::uintptr_t stream) const;
    // The stream of the most recently used context of `device` whose stream
    // is neither 0 nor being captured: the context a call captured on a
    // stream without one borrows (the Python package forks the capture onto
    // that stream and joins it back). 0 when there is none.
    std::uintptr_t borrowable_stream(int device) const;

    // Frees every context (and its workspace and cuFFT plans), after
    // emptying the cache: the allocator's callbacks never see it half made.
    void clear() noexcept;
    // release() on every context of `device` (-1: every device): waits for
    // its work and frees its workspace and cuFFT plans; graphs captured from them
    // become invalid, so they are unpinned.
    void release(int device);
    std::size_t size() const noexcept { return entries_.size(); }
    std::size_t size(int device) const noexcept;
    std::size_t pinned(int device) const noexcept;
    // (stream, being captured, pinned) of each context of `device`, least recently used first.
    std::vector<std::tuple<std::uintptr_t, bool, bool>> streams(int device) const;

    std::size_t capacity() const noexcept { return capacity_; }
    // At least 1. Evicts beyond it at the next new context.
    void set_capacity(std::size_t contexts);

    void set_workspace_limit(int device, std::size_t bytes);
    std::size_t workspace_limit(int device) const;
#ifdef FFTCONV_PYTHON_HAS_ALLOCATOR
    // Applied to every context of `device`, now (which frees what each
    // holds) and when made; a default-constructed one: cudaMalloc.
    void set_allocator(int device, const workspace_allocator& allocator);
#endif

private:
    struct entry {
        int device = 0;
        std::uintptr_t stream = 0;
        std::unique_ptr<context> ctx;
        std::uint64_t last_use = 0;
        bool pinned = false;  // used during a capture
    };
    struct settings {
        std::size_t workspace_limit = std::numeric_limits<std::size_t>::max();
#ifdef FFTCONV_PYTHON_HAS_ALLOCATOR
        workspace_allocator allocator{};
#endif
    };
    entry* find(int device, std::uintptr_t stream);
    const entry* find(int device, std::uintptr_t stream) const;
    void evict_for_one_more(int device);

    std::mutex mutex_;
    std::vector<entry> entries_;
    std::map<int, settings> settings_;
    std::uint64_t clock_ = 0;
    std::size_t capacity_ = 8;
};

// The process's cache. Never destroyed by a static destructor (the CUDA
// runtime may be gone by then); the Python package clears it at exit.
context_cache& contexts();

// In a child process just forked (its only thread): a fresh, empty cache.
// The parent's may be locked by a thread the child does not have, and its
// contexts belong to the parent's CUDA state; both are left untouched
// (leaked), so the child's calls fail with CUDA's own error, not hang.
void renew_contexts_after_fork() noexcept;

}  // namespace fftconv::python
