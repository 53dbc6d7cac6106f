#include "context_cache.hpp"

#include <algorithm>
#include <cstdio>
#include <new>
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

bool is_capturing(std::uintptr_t stream) {
    if (stream == 0) return false;
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(reinterpret_cast<cudaStream_t>(stream), &status) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    return status != cudaStreamCaptureStatusNone;
}

namespace {

std::string hex(std::uintptr_t value) {
    char text[2 + 2 * sizeof value + 1];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(value));
    return text;
}

}  // namespace

context_cache::entry* context_cache::find(int device, std::uintptr_t stream) {
    for (auto& e : entries_)
        if (e.device == device && e.stream == stream) return &e;
    return nullptr;
}

const context_cache::entry* context_cache::find(int device, std::uintptr_t stream) const {
    for (const auto& e : entries_)
        if (e.device == device && e.stream == stream) return &e;
    return nullptr;
}

bool context_cache::contains(int device, std::uintptr_t stream) const { return find(device, stream) != nullptr; }

std::size_t context_cache::size(int device) const noexcept {
    std::size_t n = 0;
    for (const auto& e : entries_) n += e.device == device;
    return n;
}

std::size_t context_cache::pinned(int device) const noexcept {
    std::size_t n = 0;
    for (const auto& e : entries_) n += e.device == device && e.pinned;
    return n;
}

std::vector<std::tuple<std::uintptr_t, bool, bool>> context_cache::streams(int device) const {
    std::vector<const entry*> of_device;
    for (const auto& e : entries_)
        if (e.device == device) of_device.push_back(&e);
    std::sort(of_device.begin(), of_device.end(), [](const entry* a, const entry* b) { return a->last_use < b->last_use; });
    std::vector<std::tuple<std::uintptr_t, bool, bool>> result;
    for (const entry* e : of_device) result.emplace_back(e->stream, is_capturing(e->stream), e->pinned);
    return result;
}

void context_cache::evict_for_one_more(int device) {
    // The least recently used unpinned contexts of `device` go until one more fits.
    while (size(device) >= capacity_) {
        auto victim = entries_.end();
        for (auto it = entries_.begin(); it != entries_.end(); ++it)
            if (it->device == device && !it->pinned && (victim == entries_.end() || it->last_use < victim->last_use))
                victim = it;
        if (victim == entries_.end()) return;  // all pinned by graphs: keep them
        // Destroyed (which waits for its work and may call the allocator
        // back) once entries_ is whole again.
        const std::unique_ptr<context> evicted = std::move(victim->ctx);
        entries_.erase(victim);
    }
}

context& context_cache::get(int device, std::uintptr_t stream) {
    const bool capturing = is_capturing(stream);
    if (entry* e = find(device, stream)) {
        e->last_use = ++clock_;
        e->pinned = e->pinned || capturing;
        return *e->ctx;
    }
    if (capturing)
        throw error(status::invalid_argument,
                    "fftconv: stream " + hex(stream) + " on CUDA device " + std::to_string(device) +
                        " is being captured into a CUDA graph and has no fftconv context, and making one "
                        "allocates: run the captured calls once before capturing (PyTorch: the warm-up "
                        "iterations on a side stream), or call fftconv.reserve(...) for each problem on "
                        "the stream you capture on");
    evict_for_one_more(device);
    entry made;
    made.device = device;
    made.stream = stream;
    made.ctx = std::make_unique<context>(reinterpret_cast<cudaStream_t>(stream));
    const auto found = settings_.find(device);
    if (found != settings_.end()) {
        made.ctx->set_workspace_limit(found->second.workspace_limit);
#ifdef FFTCONV_PYTHON_HAS_ALLOCATOR
        if (!found->second.allocator.is_default()) made.ctx->set_workspace_allocator(found->second.allocator);
#endif
    }
    made.last_use = ++clock_;
    entries_.push_back(std::move(made));
    return *entries_.back().ctx;
}

std::uintptr_t context_cache::borrowable_stream(int device) const {
    const entry* best = nullptr;
    for (const auto& e : entries_)
        if (e.device == device && e.stream != 0 && !is_capturing(e.stream) &&
            (best == nullptr || e.last_use > best->last_use))
            best = &e;
    return best ? best->stream : 0;
}

void context_cache::clear() noexcept {
    std::vector<entry> cleared;
    cleared.swap(entries_);
}  // `cleared` is destroyed here, the cache already empty

void context_cache::release(int device) {
    for (auto& e : entries_)
        if (device < 0 || e.device == device) {
            device_guard guard(e.device);
            e.ctx->release();
            e.pinned = false;
        }
}

void context_cache::set_capacity(std::size_t contexts) {
    if (contexts < 1) throw error(status::invalid_argument, "fftconv: the context cache needs room for at least 1 context");
    capacity_ = contexts;
}

void context_cache::set_workspace_limit(int device, std::size_t bytes) {
    settings_[device].workspace_limit = bytes;
    for (auto& e : entries_)
        if (e.device == device) e.ctx->set_workspace_limit(bytes);
}

std::size_t context_cache::workspace_limit(int device) const {
    const auto found = settings_.find(device);
    return found == settings_.end() ? std::numeric_limits<std::size_t>::max() : found->second.workspace_limit;
}

#ifdef FFTCONV_PYTHON_HAS_ALLOCATOR
void context_cache::set_allocator(int device, const workspace_allocator& allocator) {
    // All or nothing: the setting changes once every context of the device
    // took the allocator. Where one refuses it (the allocator fails at once),
    // those already switched go back to the previous allocator; one that
    // cannot is dropped (made again, with the previous one, on next use).
    const auto found = settings_.find(device);
    const workspace_allocator previous = found == settings_.end() ? workspace_allocator{} : found->second.allocator;
    std::vector<entry*> switched;
    try {
        for (auto& e : entries_)
            if (e.device == device) {
                device_guard guard(device);
                e.ctx->set_workspace_allocator(allocator);
                switched.push_back(&e);
            }
    } catch (...) {
        std::vector<std::uintptr_t> stuck;
        for (entry* e : switched) {
            try {
                device_guard guard(device);
                e->ctx->set_workspace_allocator(previous);
            } catch (...) {
                stuck.push_back(e->stream);
            }
        }
        for (const std::uintptr_t stream : stuck) {
            const auto at = std::find_if(entries_.begin(), entries_.end(),
                                         [&](const entry& e) { return e.device == device && e.stream == stream; });
            const std::unique_ptr<context> dropped = std::move(at->ctx);  // destroyed once entries_ is whole
            entries_.erase(at);
        }
        throw;
    }
    settings_[device].allocator = allocator;
}
#endif

namespace {
context_cache* the_cache = new context_cache;  // deliberately never deleted: see the header
}  // namespace

context_cache& contexts() { return *the_cache; }

void renew_contexts_after_fork() noexcept {
    if (context_cache* fresh = new (std::nothrow) context_cache) the_cache = fresh;
}

}  // namespace fftconv::python
