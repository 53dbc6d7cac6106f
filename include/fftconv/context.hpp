// fftconv/context.hpp — the object that owns every GPU resource fftconv uses.
//
// A context is bound to one CUDA device (the current one when it is made) and
// to one stream. It owns a cuBLAS handle, the cuFFT plans (made on first use,
// the 64 most recently used kept), one device workspace that grows to the
// largest problem seen, and a second stream. Every call is ordered on the
// context's stream: large problems fork part of their work to the second
// stream and join it back (events) before the call returns, so to the caller
// a call is one unit of work on its stream. After the first call on a problem
// shape (or reserve()), calls neither allocate nor synchronize.
//
// Memory. A problem whose intermediates exceed the workspace limit
// (set_workspace_limit; by default the device's free memory) runs in passes
// that fit it — a few samples at a time, then bands of rows, then groups of
// output channels — and gives the same result. Only a problem whose smallest
// pass does not fit fails, with status::out_of_memory and the byte counts.
// release() hands every cached cuFFT plan and the workspace back.
//
// CUDA graphs. Call reserve(p) (or run p once) before capturing a call on p;
// a call that would have to allocate while its stream is captured throws
// invalid_argument and allocates nothing. A graph stays valid when later
// calls grow the workspace (the buffer it uses is kept) until release(),
// which invalidates graphs captured from this context.
//
// Repeated calls. A conv2d call repeated with the same problem, pointers and
// workspace limit is captured by the context into a CUDA graph on its second
// sighting and enqueued by one graph launch from then on: the same kernels
// and results, a fraction of the host time (replay_repeated_calls).
//
// Checks. Every call first checks that the context's device is current, that
// no CUDA error from earlier work is pending (that error is left untouched
// and named in the message), and that x, w and y are device memory of this
// device large enough for the problem; a failed check throws before anything
// is enqueued. A call that fails later (a CUDA, cuFFT or cuBLAS error) has
// joined its side stream; y may then hold partial results.
//
// Threads. A context is not thread-safe: use one per thread (or per stream),
// or serialize the calls. Different contexts may be used from different
// threads at the same time.
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include <cstddef>
#include <memory>

#include <cuda_runtime_api.h>

#include "fftconv/config.hpp"
#include "fftconv/detail/runtime/device_buffer.hpp"
#include "fftconv/dispatch.hpp"
#include "fftconv/element_type.hpp"
#include "fftconv/problem.hpp"
#include "fftconv/workspace_allocator.hpp"

namespace fftconv {

namespace detail {
class call_graphs;
class engine;
class router;
}

class filter_spectrum;

class context {
public:
    // Binds to the current CUDA device and to `stream` (0: the legacy default stream).
    explicit context(cudaStream_t stream = nullptr);
    ~context();
    context(context&&) noexcept;
    context& operator=(context&&) noexcept;

    cudaStream_t stream() const noexcept;
    // Later calls run on `stream`, after all work this context enqueued on the
    // old stream (an event orders them; nothing synchronizes the host).
    void set_stream(cudaStream_t stream);

    // How `p` will be computed: a specialization added here, a compiled
    // configuration, the generic path, or (small depthwise problems) the
    // direct path, and with which tile extent. Validates `p`.
    dispatch_decision plan(const problem& p) const;

    // Later calls whose problem matches s.config run `s` (made by
    // fftconv::specialize<Cfg>(), fftconv/specialize.cuh), before the
    // compiled table; the latest added wins.
    void add_specialization(const specialization& s);

    // 0 (the default): the specializations, then the generic heuristic.
    // 1 <= t <= 65536: every problem runs the generic path with tile extent t
    // (a tuning aid; problems whose kernel is larger than t either way are rejected).
    void force_tile_extent(int t);

    // The most device memory the workspace may take (bytes). Problems that
    // need more run in passes within it. Default: no limit beyond the
    // device's free memory. Takes effect at the next call; a workspace
    // already larger is kept until release().
    void set_workspace_limit(std::size_t bytes);
    std::size_t workspace_limit() const noexcept;

    // Device bytes of workspace a call on `p` will use at most (cuFFT work
    // area included), under the workspace limit: the larger of a call with a
    // filter and a call through a filter spectrum (under a limit the two may
    // run in passes of different shapes). On the direct path conv2d with a
    // filter uses none; this and reserve() still cover a call through a
    // filter spectrum, which runs the transforms.
    std::size_t workspace_size(const problem& p) const;

    // Later allocations of the workspace, the gradient buffer and the cuBLAS
    // workspace come from `allocator` (a default-constructed one: cudaMalloc
    // again). Waits for the context's work and gives back what it holds
    // first, as release() does. Filter spectra keep cudaMalloc: they belong
    // to the caller. Refused while the stream is captured. Where `allocator`
    // fails at once (the context's 32 MiB cuBLAS workspace comes from it),
    // this throws out_of_memory and the context keeps its previous allocator.
    void set_workspace_allocator(const workspace_allocator& allocator);

    // Waits for the context's work, then frees the workspace, every cached
    // cuFFT plan and every buffer kept for CUDA graphs (which become invalid).
    void release();

    // On (the default): conv2d calls seen before replay as CUDA graphs (see
    // the top). Off: every call launches its kernels, and the graphs held are
    // dropped.
    void replay_repeated_calls(bool enabled);

    // Makes the cuFFT plans and grows the workspace for `p` now, so the next call on
    // `p`, with a filter or through a filter spectrum, allocates nothing
    // (needed before stream capture).
    void reserve(const problem& p);

    // y = conv2d(x, w) + bias on the context's stream. x, w, bias, y are
    // device pointers laid out as problem.hpp says (bias: out_channels floats,
    // or null for none); y must not overlap x, w or bias. x and y are float,
    // __nv_bfloat16 or __half (both the same: fftconv/element_type.hpp); w
    // and bias are float.
    template <activation_element E>
    void conv2d(const problem& p, const E* x, const float* w, const float* bias, E* y) {
        conv2d(p, detail::activations_of(x, y), w, bias);
    }
    template <activation_element E>
    void conv2d(const problem& p, const E* x, const float* w, E* y) {
        conv2d(p, detail::activations_of(x, y), w, nullptr);
    }

    // The filter's spectrum, computed once (inference): reuse it for every
    // call with the same filter. See filter_spectrum below. It allocates the
    // spectrum (cudaMalloc), so it is refused while the stream is captured;
    // of the workspace it uses only the filters padded to the tile extent on
    // the cuFFT extents (none on the fused ones), within the workspace limit.
    filter_spectrum transform_filter(const problem& p, const float* w);
    template <activation_element E>
    void conv2d(const problem& p, const E* x, const filter_spectrum& w, const float* bias, E* y) {
        conv2d(p, detail::activations_of(x, y), w, bias);
    }
    template <activation_element E>
    void conv2d(const problem& p, const E* x, const filter_spectrum& w, E* y) {
        conv2d(p, detail::activations_of(x, y), w, nullptr);
    }

    // Training: the gradients of y = conv2d(x, w) + bias with respect to x,
    // w and bias, given dy (y's gradient, y's shape), for the same problem
    // `p`. dx has x's shape, dw w's, dbias out_channels floats (null: not
    // computed). They are written, not accumulated. Same stream, workspace,
    // capture and error rules as conv2d; their intermediates (src/api/backward.cpp)
    // are kept in a second buffer the context owns beside the workspace
    // (reserve_backward makes both). dy and dx are float, __nv_bfloat16 or
    // __half (both the same); the filter gradient's operands are float.
    template <activation_element E>
    void conv2d_backward_data(const problem& p, const E* dy, const float* w, E* dx) {
        conv2d_backward_data(p, detail::activations_of(dy, dx), w);
    }
    void conv2d_backward_filter(const problem& p, const float* x, const float* dy, float* dw,
                                float* dbias = nullptr);
    // Grows the workspace and the gradient buffer and makes the cuFFT plans the
    // two gradients of `p` need, so that their next calls allocate nothing.
    void reserve_backward(const problem& p);

    // The machinery, for code that instantiates its own configurations
    // (fftconv/specialize.cuh). Not part of the stable API.
    detail::engine& engine() noexcept { return *engine_; }
    const detail::call_graphs& call_graphs() const noexcept { return *graphs_; }

private:
    void conv2d(const problem& p, detail::activations io, const float* w, const float* bias);
    void conv2d(const problem& p, detail::activations io, const filter_spectrum& w, const float* bias);
    void conv2d_backward_data(const problem& p, detail::activations io, const float* w);

    std::unique_ptr<detail::engine> engine_;  // the resources: handles, cuFFT plans, workspace, streams
    std::unique_ptr<detail::router> router_;  // which code runs each call
    std::unique_ptr<detail::call_graphs> graphs_;  // repeated calls as CUDA graphs
};

// A filter already in the frequency domain, with the geometry it was made
// for. Owns its device memory. Only problems with the same channels, kernel
// extent and tile extent can use it; conv2d checks this and throws otherwise.
class filter_spectrum {
public:
    std::int64_t in_channels() const noexcept { return geometry_.in_channels(); }
    std::int64_t out_channels() const noexcept { return geometry_.out_channels(); }
    // The kernel extent, channels and tile extent it was made for.
    const tile_geometry<>& geometry() const noexcept { return geometry_; }
    std::int64_t groups() const noexcept { return groups_; }
    // The CUDA device its memory is on (its context's).
    int device() const noexcept { return device_; }
    std::size_t bytes() const noexcept;
    const void* data() const noexcept { return data_.get(); }

private:
    friend class context;
    filter_spectrum(const tile_geometry<>& geometry, std::int64_t groups, int device);

    tile_geometry<> geometry_;
    std::int64_t groups_;
    int device_;
    detail::device_buffer data_;
};

}  // namespace fftconv
