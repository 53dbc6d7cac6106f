// fftconv/detail/runtime/engine.hpp — the resources behind a context: cuBLAS handle,
// cached cuFFT plans, the device workspace, the side stream. (How the
// workspace is laid out: workspace_layout.hpp; the spectral product:
// spectral_product.hpp.) Rule of zero
// throughout: every resource sits in a unique_ptr whose deleter cannot throw.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <memory>
#include <type_traits>
#include <vector>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cufft.h>

#include "fftconv/detail/runtime/device_buffer.hpp"
#include "fftconv/workspace_allocator.hpp"

namespace fftconv::detail {

struct cublas_destroy {
    void operator()(cublasHandle_t h) const noexcept { (void)cublasDestroy(h); }
};
using cublas_handle = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, cublas_destroy>;

struct stream_destroy {
    void operator()(cudaStream_t s) const noexcept { (void)cudaStreamDestroy(s); }
};
using owned_stream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, stream_destroy>;

struct event_destroy {
    void operator()(cudaEvent_t e) const noexcept { (void)cudaEventDestroy(e); }
};
using owned_event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, event_destroy>;

enum class fft_direction : int { forward, inverse };

// Every field that defines a batched 2D real cuFFT plan over T x T tiles.
// Real side: tiles are dense (stride 1, distance T*T). Complex side: element
// (row, col) of transform n sits at n*complex_distance + (row*(T/2+1) + col)*complex_stride.
struct fft_transform_key {
    fft_direction direction;
    bool double_precision;  // D2Z/Z2D instead of R2C/C2R
    int tile_extent;
    std::int64_t batch;
    std::int64_t complex_stride;
    std::int64_t complex_distance;

    friend auto operator<=>(const fft_transform_key&, const fft_transform_key&) = default;
};

// A cufftHandle made by cufftCreate (never 0 when held here).
struct fft_transform_deleter {
    void operator()(cufftHandle* h) const noexcept {
        (void)cufftDestroy(*h);
        delete h;
    }
};

struct fft_transform {
    std::unique_ptr<cufftHandle, fft_transform_deleter> handle;
    bool double_precision = false;
    std::size_t work_bytes = 0;  // the work area this cuFFT plan needs (auto-allocation is off)
};

// The events of the side-stream fork/join, by role.
enum class side_event : int { fork, join, hand_off };

class engine {
public:
    explicit engine(cudaStream_t stream);
    // A caller's allocator may hand memory on as soon as it is given back:
    // the streams finish first.
    ~engine();
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    cudaStream_t stream() const noexcept { return stream_; }
    // Later work runs on `stream`, ordered after everything already enqueued
    // on the old one (they share the workspace).
    void set_stream(cudaStream_t stream);
    int device() const noexcept { return device_; }

    // At the start of every call: the context's device is current, no CUDA
    // error from earlier work is pending (it would otherwise surface as ours),
    // and whether the stream is being captured into a graph.
    void begin_call();
    bool capturing() const noexcept { return capturing_; }

    // While the context itself captures a call into a graph (call_graphs.hpp),
    // the call's work goes to a private stream being captured (the caller's
    // stream may be the legacy default stream, which cannot be); nothing may
    // allocate or make a plan (as in a caller's capture), but nothing is
    // pinned or kept for that graph either: every change of the resources a
    // graph refers to (workspace, scratch or cuBLAS workspace reallocated, a
    // plan evicted, release) bumps generation(), and the context drops its
    // graphs. begin_own_capture returns the stream to capture.
    cudaStream_t begin_own_capture();
    void end_own_capture() noexcept;
    std::uint64_t generation() const noexcept { return generation_; }

    // The cached cuFFT plan for `key`, made on first use (no work area
    // attached yet). The cache keeps the transform_cache_capacity most recently
    // used cuFFT plans; those used while capturing a graph are kept until release().
    // The reference is valid until the next transform_for call (which may evict).
    const fft_transform& transform_for(const fft_transform_key& key);
    static constexpr std::size_t transform_cache_capacity = 64;
    std::size_t cached_transforms() const noexcept { return transforms_.size(); }

    // A work area of at least `bytes` on this engine's device. Grows (the
    // only allocation after warm-up) when a larger problem arrives. A buffer
    // that a captured graph may use is kept until release(), so graphs
    // captured earlier stay valid; any other old buffer is freed (cudaFree
    // waits for the device). Refuses to grow while capturing.
    void* workspace(std::size_t bytes);
    std::size_t workspace_capacity() const noexcept { return workspace_bytes_; }

    // A second buffer with the workspace's rules, for what a call keeps
    // beside the forward pipeline's workspace (the gradients' rearranged
    // operands: the pipeline they run may grow the workspace meanwhile).
    void* scratch(std::size_t bytes);
    std::size_t scratch_capacity() const noexcept { return scratch_bytes_; }

    // The most workspace a call may use (default: no limit but the device's
    // free memory); larger problems run in passes.
    std::size_t workspace_limit = std::numeric_limits<std::size_t>::max();
    // The workspace a new allocation may take now: the limit, or the free
    // device memory (plus the buffer a growth would free) if that is less.
    std::size_t usable_workspace() const;

    // Frees the workspace, every cached cuFFT plan and every buffer kept for
    // graphs, after the stream finished with them.
    void release();

    // Runs a cuFFT plan on this engine's stream with `work` as its work area.
    void execute(const fft_transform& p, fft_direction direction, void* in, void* out, void* work);

    cublasHandle_t blas() const noexcept { return blas_.get(); }

    // Later allocations (workspace, gradient scratch, the cuBLAS workspace)
    // come from `allocator`; what the engine holds is given back first, after
    // the streams finished with it. Refused while capturing.
    void set_allocator(const workspace_allocator& allocator);

    // A second stream for work that can overlap the main stream's. Every use
    // forks from the main stream and joins back before the call returns
    // (events, so CUDA-graph capture follows both branches).
    cudaStream_t side_stream() const noexcept { return side_.get(); }
    // Makes `waiter` wait for all work enqueued so far on `signaller`.
    void order(cudaStream_t signaller, cudaStream_t waiter, side_event which);

private:
    struct cached_transform {
        fft_transform transform;
        std::uint64_t last_use;
        bool pinned;  // used while capturing: a graph may refer to it
    };

    cudaStream_t stream_;
    int device_ = 0;
    bool capturing_ = false;
    bool own_capture_ = false;  // the context's own capture (capturing_ is set too)
    bool captured_ = false;     // some call was captured by a caller: the workspace may be in their graph
    std::uint64_t generation_ = 0;
    cublas_handle blas_;
    workspace_allocator allocator_{};
    device_buffer blas_workspace_;
    owned_stream side_;
    owned_stream capture_stream_;  // made on the first own capture
    cudaStream_t captured_from_ = nullptr;  // stream_ during an own capture
    owned_event events_[3];  // indexed by side_event
    owned_event stream_change_;
    std::map<fft_transform_key, cached_transform> transforms_;
    std::uint64_t transform_uses_ = 0;
    device_buffer workspace_;
    std::size_t workspace_bytes_ = 0;
    device_buffer scratch_;
    std::size_t scratch_bytes_ = 0;
    std::vector<device_buffer> kept_for_graphs_;

    void* grow(device_buffer& buffer, std::size_t& held, std::size_t bytes, const char* what);
    void attach_blas_workspace();
    void synchronize_streams();
};

// Throws invalid_argument: `what` (a cuFFT plan or memory this call needs) cannot
// be made while the stream is captured, and reserve() is the remedy.
[[noreturn]] void refuse_during_capture(const std::string& what);

// Forks the side stream from the main stream on construction when `active`;
// join() (or, after a failure, the destructor) makes the main stream wait for
// everything the side stream got, so no call leaves work un-joined.
class side_branch {
public:
    side_branch(engine& e, bool active);
    ~side_branch();
    side_branch(const side_branch&) = delete;
    side_branch& operator=(const side_branch&) = delete;

    cudaStream_t stream() const noexcept { return active_ ? e_.side_stream() : e_.stream(); }
    void join();

private:
    engine& e_;
    bool active_;
};

}  // namespace fftconv::detail
