// fftconv/detail/engine.hpp — the resources behind a context: cuBLAS handle,
// cached cuFFT plans, the device workspace. Rule of zero throughout: every
// resource sits in a unique_ptr whose deleter cannot throw.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <type_traits>

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cufft.h>

#include "fftconv/detail/device_buffer.hpp"

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

// Every field that defines a batched 2D real FFT plan over T x T tiles.
// Real side: tiles are dense (stride 1, distance T*T). Complex side: element
// (row, col) of transform n sits at n*complex_distance + (row*(T/2+1) + col)*complex_stride.
struct fft_plan_key {
    fft_direction direction;
    int tile_extent;
    std::int64_t batch;
    std::int64_t complex_stride;
    std::int64_t complex_distance;

    friend auto operator<=>(const fft_plan_key&, const fft_plan_key&) = default;
};

struct fft_plan_deleter {
    void operator()(cufftHandle* h) const noexcept {
        (void)cufftDestroy(*h);
        delete h;
    }
};

struct fft_plan {
    std::unique_ptr<cufftHandle, fft_plan_deleter> handle;
    std::size_t work_bytes = 0;  // the work area this plan needs (auto-allocation is off)
};

class engine {
public:
    explicit engine(cudaStream_t stream);

    cudaStream_t stream() const noexcept { return stream_; }
    void set_stream(cudaStream_t stream);
    int device() const noexcept { return device_; }

    // The cached plan for `key`, made on first use (no work area attached yet).
    const fft_plan& plan(const fft_plan_key& key);

    // A work area of at least `bytes` on this engine's device. Grows (the
    // only allocation after warm-up) when a larger problem arrives; the old
    // buffer is freed after the device finished with it (cudaFree synchronizes).
    void* workspace(std::size_t bytes);
    std::size_t workspace_capacity() const noexcept { return workspace_bytes_; }

    // Runs a plan on this engine's stream with `work` as its work area.
    void execute(const fft_plan& p, fft_direction direction, void* in, void* out, void* work);

    cublasHandle_t blas() const noexcept { return blas_.get(); }

    // A second stream for work that can overlap the main stream's. Every use
    // forks from the main stream and joins back before the call returns
    // (events, so CUDA-graph capture follows both branches).
    cudaStream_t side_stream() const noexcept { return side_.get(); }
    // Makes `waiter` wait for all work enqueued so far on `signaller`.
    void order(cudaStream_t signaller, cudaStream_t waiter, int which);

    // 0: automatic (compiled table, then the generic heuristic).
    int forced_tile_extent = 0;

private:
    cudaStream_t stream_;
    int device_ = 0;
    cublas_handle blas_;
    device_buffer blas_workspace_;
    owned_stream side_;
    owned_event events_[3];  // fork, join, and the mid-GEMM hand-off
    std::map<fft_plan_key, fft_plan> plans_;
    device_buffer workspace_;
    std::size_t workspace_bytes_ = 0;
};

}  // namespace fftconv::detail

namespace fftconv {
struct problem;
}

namespace fftconv::detail {

struct tiling;

// The three cuFFT plans of one problem and where each intermediate lives.
struct pipeline_buffers {
    float* real;                    // real tiles: padded filters, then input tiles, then output tiles
    cufftComplex* input_spectrum;
    cufftComplex* filter_spectrum;  // the workspace's; a filter_spectrum object brings its own
    cufftComplex* output_spectrum;
    void* fft_work;
    const fft_plan* filter_plan;    // the three plans: null on the fused path
    const fft_plan* input_plan;
    const fft_plan* output_plan;
};

fft_plan_key filter_plan_key(const tiling& t);
fft_plan_key input_plan_key(const problem& p, const tiling& t);
fft_plan_key output_plan_key(const problem& p, const tiling& t);

// Bytes of workspace `p` needs with tiling `t` (makes and caches its plans).
std::size_t workspace_bytes(engine& e, const problem& p, const tiling& t);

// Makes the plans, grows the workspace if needed, and hands out the pointers.
pipeline_buffers prepare(engine& e, const problem& p, const tiling& t);

// The frequency-domain product: for every bin f,
//   output_spectrum[f] (M x out) = input_spectrum[f] (M x in) * conj(filter[f]) (in x out)
// as one strided-batched complex GEMM, FP32 accumulation (no TF32).
void multiply_spectra(engine& e, const problem& p, const tiling& t, const cufftComplex* filter,
                      const pipeline_buffers& b);

// The same for output channels [first, last) only: columns of the output
// spectrum, i.e. output tiles [first * M, last * M).
void multiply_spectra(engine& e, const problem& p, const tiling& t, const cufftComplex* filter,
                      const pipeline_buffers& b, std::int64_t first, std::int64_t last);

// Refuses problems whose intermediates would overflow the index types of
// cuBLAS (32-bit m, n, k, batch) or 64-bit byte counts, naming the quantity.
void check_tiling_limits(const problem& p, const tiling& t);

}  // namespace fftconv::detail
