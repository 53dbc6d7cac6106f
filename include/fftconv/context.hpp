// fftconv/context.hpp — the object that owns every GPU resource fftconv uses.
//
// A context is bound to one CUDA device (the current one when it is made) and
// to one stream. It owns a cuBLAS handle, the cuFFT plans (made on first use,
// cached by every field that defines them), one device workspace that grows
// to the largest problem seen, and a second stream. Every call is ordered on
// the context's stream: large problems fork part of their work to the second
// stream and join it back (events) before the call returns, so to the caller
// a call is one unit of work on its stream. After the first call on a problem
// shape, calls neither allocate nor synchronize, so they can be captured in a
// CUDA graph (call reserve() or run once before capturing).
//
// A context is not thread-safe: use one per thread (or per stream).
#pragma once

#include <cstddef>
#include <memory>

#include <cuda_runtime_api.h>

#include "fftconv/config.hpp"
#include "fftconv/detail/device_buffer.hpp"
#include "fftconv/dispatch.hpp"
#include "fftconv/problem.hpp"

namespace fftconv {

namespace detail {
class engine;
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
    // Later calls run on `stream`. Work already enqueued stays where it is.
    void set_stream(cudaStream_t stream);

    // How `p` will be computed (table entry or generic tile extent). Validates `p`.
    dispatch_decision plan(const problem& p) const;

    // 0 (the default): the compiled table, then the generic heuristic.
    // t > 0: every problem runs the generic path with tile extent t (a tuning
    // aid; problems with kernel_extent > t are rejected).
    void force_tile_extent(int t);

    // Device bytes the workspace needs for `p` (cuFFT work area included).
    std::size_t workspace_size(const problem& p) const;

    // Makes the plans and grows the workspace for `p` now, so the next call on
    // `p` allocates nothing (needed before stream capture).
    void reserve(const problem& p);

    // y = conv2d(x, w) on the context's stream. x, w, y are device pointers
    // laid out as problem.hpp says; y must not overlap x or w.
    void conv2d(const problem& p, const float* x, const float* w, float* y);

    // The filter's spectrum, computed once (inference): reuse it for every
    // call with the same filter. See filter_spectrum below.
    filter_spectrum transform_filter(const problem& p, const float* w);
    void conv2d(const problem& p, const float* x, const filter_spectrum& w, float* y);

    // The machinery, for code that instantiates its own configurations
    // (fftconv/specialize.cuh). Not part of the stable API.
    detail::engine& engine() noexcept { return *engine_; }

private:
    std::unique_ptr<detail::engine> engine_;
};

// A filter already in the frequency domain, with the geometry it was made
// for. Owns its device memory. Only problems with the same channels, kernel
// extent and tile extent can use it; conv2d checks this and throws otherwise.
class filter_spectrum {
public:
    std::int64_t in_channels() const noexcept { return in_channels_; }
    std::int64_t out_channels() const noexcept { return out_channels_; }
    tile_shape shape() const noexcept { return shape_; }
    std::size_t bytes() const noexcept;
    const void* data() const noexcept { return data_.get(); }

private:
    friend class context;
    filter_spectrum(std::int64_t in_channels, std::int64_t out_channels, tile_shape shape);

    std::int64_t in_channels_;
    std::int64_t out_channels_;
    tile_shape shape_;
    detail::device_buffer data_;
};

}  // namespace fftconv
