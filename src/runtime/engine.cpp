// src/runtime/engine.cpp — the resources of a context: cuFFT plans, workspace, streams.
#include <algorithm>
#include <climits>
#include <string>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/engine.hpp"

namespace fftconv::detail {
namespace {

// cuBLAS's recommended user workspace on Hopper. Ours, not its default pool,
// so that a captured graph never asks cuBLAS to allocate.
constexpr std::size_t blas_workspace_bytes = std::size_t{32} << 20;

// Device memory a workspace growth leaves free for what allocates beside us
// (cuFFT plans' twiddles, the caller's next tensors): 1/16 of what is free, at
// most 256 MiB.
constexpr std::size_t headroom(std::size_t available) {
    return std::min<std::size_t>(available / 16, std::size_t{256} << 20);
}

owned_event make_event() {
    cudaEvent_t e = nullptr;
    FFTCONV_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return owned_event(e);
}

// Refuses a stream of another device than `device` (work enqueued on it
// would run there, on memory of this one). The legacy and per-thread default
// streams are every device's own.
void require_stream_of(cudaStream_t stream, int device, const char* where) {
    if (stream == nullptr || stream == cudaStreamLegacy || stream == cudaStreamPerThread) return;
    int owner = -1;
    FFTCONV_CUDA_TRY(cudaStreamGetDevice(stream, &owner));
    if (owner != device)
        throw_invalid(std::string("fftconv: ") + where + ": the stream belongs to CUDA device " +
                      std::to_string(owner) + ", but the context is on device " + std::to_string(device) +
                      ": give it a stream of its own device");
}

}  // namespace

[[noreturn]] void refuse_during_capture(const std::string& what) {
    throw_invalid("fftconv: " + what +
                  ", which cannot happen while the stream is being captured into a CUDA graph: "
                  "call reserve(problem) (C: fftconv_reserve) for this problem before capturing");
}


engine::engine(cudaStream_t stream) : stream_(stream) {
    FFTCONV_CUDA_TRY(cudaGetDevice(&device_));
    require_stream_of(stream, device_, "context(stream)");
    cublasHandle_t h = nullptr;
    FFTCONV_CUBLAS_TRY(cublasCreate(&h));
    blas_.reset(h);
    FFTCONV_CUBLAS_TRY(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // FP32 products, never TF32
    FFTCONV_CUBLAS_TRY(cublasSetStream(h, stream_));
    attach_blas_workspace();
    cudaStream_t side = nullptr;
    FFTCONV_CUDA_TRY(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    side_.reset(side);
    for (auto& event : events_) event = make_event();
    stream_change_ = make_event();
}

engine::~engine() {
    if (allocator_.is_default()) return;  // cudaFree waits for the device by itself
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamSynchronize(side_.get());
}

void engine::begin_call() {
    int current = -1;
    FFTCONV_CUDA_TRY(cudaGetDevice(&current));
    if (current != device_)
        throw_invalid("fftconv: this context belongs to CUDA device " + std::to_string(device_) +
                      ", but device " + std::to_string(current) +
                      " is current: call cudaSetDevice(" + std::to_string(device_) +
                      ") first, or make one context per device");
    // Our own launch checks read cudaGetLastError(); an error someone else
    // left pending would be reported (and cleared) as ours.
    const cudaError_t pending = cudaPeekAtLastError();
    if (pending != cudaSuccess)
        throw error(status::cuda_error,
                    std::string("fftconv: not run, because a CUDA error from earlier work is pending: ") +
                        cudaGetErrorName(pending) + " (" + cudaGetErrorString(pending) +
                        "). fftconv did not cause it and leaves it in place for its owner "
                        "(cudaGetLastError() reads and clears it)");
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    FFTCONV_CUDA_TRY(cudaStreamIsCapturing(stream_, &capture));
    capturing_ = capture != cudaStreamCaptureStatusNone;
    captured_ = captured_ || capturing_;
}

void engine::order(cudaStream_t signaller, cudaStream_t waiter, side_event which) {
    cudaEvent_t e = events_[int(which)].get();
    FFTCONV_CUDA_TRY(cudaEventRecord(e, signaller));
    FFTCONV_CUDA_TRY(cudaStreamWaitEvent(waiter, e, 0));
}

void engine::set_stream(cudaStream_t stream) {
    if (stream == stream_) return;
    begin_call();
    require_stream_of(stream, device_, "set_stream");
    // The old stream's calls may still be reading and writing the workspace:
    // the new stream starts after them.
    FFTCONV_CUDA_TRY(cudaEventRecord(stream_change_.get(), stream_));
    FFTCONV_CUDA_TRY(cudaStreamWaitEvent(stream, stream_change_.get(), 0));
    FFTCONV_CUBLAS_TRY(cublasSetStream(blas_.get(), stream));
    stream_ = stream;
}

const fft_transform& engine::transform_for(const fft_transform_key& key) {
    ++transform_uses_;
    if (auto it = transforms_.find(key); it != transforms_.end()) {
        it->second.last_use = transform_uses_;
        it->second.pinned = it->second.pinned || (capturing_ && !own_capture_);
        return it->second.transform;
    }
    if (capturing_)
        refuse_during_capture("this problem needs a cuFFT plan (tile extent " +
                              std::to_string(key.tile_extent) + ", batch " + std::to_string(key.batch) +
                              ") that the context has not made yet");
    if (transforms_.size() >= transform_cache_capacity) {
        auto victim = transforms_.end();
        for (auto it = transforms_.begin(); it != transforms_.end(); ++it)
            if (!it->second.pinned && (victim == transforms_.end() || it->second.last_use < victim->second.last_use))
                victim = it;
        if (victim != transforms_.end()) {
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream_));  // its last launch may still be queued
            transforms_.erase(victim);
            ++generation_;
        }
    }

    cufftHandle raw = 0;
    FFTCONV_CUFFT_TRY(cufftCreate(&raw));  // owned only once made: a failed create leaves nothing
    fft_transform made;
    made.handle.reset(new cufftHandle{raw});
    made.double_precision = key.double_precision;
    const cufftHandle h = raw;
    FFTCONV_CUFFT_TRY(cufftSetAutoAllocation(h, 0));  // the work area comes from our workspace

    long long extents[2] = {key.tile_extent, key.tile_extent};
    long long real_embed[2] = {key.tile_extent, key.tile_extent};
    long long complex_embed[2] = {key.tile_extent, key.tile_extent / 2 + 1};
    const long long real_distance = (long long)key.tile_extent * key.tile_extent;
    const bool forward = key.direction == fft_direction::forward;
    FFTCONV_CUFFT_TRY(cufftMakePlanMany64(
        h, 2, extents, forward ? real_embed : complex_embed,
        forward ? 1 : key.complex_stride, forward ? real_distance : key.complex_distance,
        forward ? complex_embed : real_embed, forward ? key.complex_stride : 1,
        forward ? key.complex_distance : real_distance,
        key.double_precision ? (forward ? CUFFT_D2Z : CUFFT_Z2D) : (forward ? CUFFT_R2C : CUFFT_C2R), key.batch,
        &made.work_bytes));
    return transforms_.emplace(key, cached_transform{std::move(made), transform_uses_, false}).first->second.transform;
}

void engine::attach_blas_workspace() {
    // The new workspace is attached before the old one is freed: where
    // allocating or attaching throws, cuBLAS keeps the old one, still alive.
    device_buffer made = allocate_device(blas_workspace_bytes, "the cuBLAS workspace", allocator_, stream_);
    FFTCONV_CUBLAS_TRY(cublasSetWorkspace(blas_.get(), made.get(), blas_workspace_bytes));
    ++generation_;
    blas_workspace_ = std::move(made);
}

void engine::synchronize_streams() {
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream_));
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(side_.get()));
}

// Grows `buffer` (holding `held` bytes) to `bytes`: refused while capturing;
// a buffer a captured graph may use is kept for it, any other old one freed
// once no call uses it (cudaFree waits for the device by itself; a caller's
// allocator may hand the memory on at once, so the streams finish first).
void* engine::grow(device_buffer& buffer, std::size_t& held, std::size_t bytes, const char* what) {
    if (bytes > held) {
        if (capturing_)
            refuse_during_capture("this problem needs " + std::to_string(bytes) + " bytes of " + what +
                                  " and the context holds " + std::to_string(held));
        ++generation_;
        if (captured_ && buffer) kept_for_graphs_.push_back(std::move(buffer));
        if (buffer && !allocator_.is_default()) synchronize_streams();
        buffer.reset();
        held = 0;
        buffer = allocate_device(bytes, (std::string("the fftconv ") + what).c_str(), allocator_, stream_);
        held = bytes;
    }
    return buffer.get();
}

void* engine::workspace(std::size_t bytes) { return grow(workspace_, workspace_bytes_, bytes, "workspace"); }

void* engine::scratch(std::size_t bytes) { return grow(scratch_, scratch_bytes_, bytes, "gradient scratch"); }

void engine::set_allocator(const workspace_allocator& allocator) {
    if (!allocator.is_default() && allocator.deallocate == nullptr)
        throw_invalid("fftconv: set_workspace_allocator: the allocator has an allocate but no deallocate callback");
    release();
    // All or nothing: where the new allocator cannot give the cuBLAS
    // workspace, the context keeps the old allocator and its workspace.
    const workspace_allocator previous = allocator_;
    allocator_ = allocator;
    try {
        attach_blas_workspace();
    } catch (...) {
        allocator_ = previous;
        throw;
    }
}

std::size_t engine::usable_workspace() const {
    if (capturing_) return std::min(workspace_limit, workspace_bytes_);
    std::size_t free_bytes = 0, total_bytes = 0;
    FFTCONV_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::size_t available = free_bytes + (captured_ ? 0 : workspace_bytes_);
    return std::min(workspace_limit, std::max(workspace_bytes_, available - headroom(available)));
}

void engine::release() {
    begin_call();
    if (capturing_) refuse_during_capture("release() frees memory");
    synchronize_streams();
    transforms_.clear();
    workspace_.reset();
    workspace_bytes_ = 0;
    scratch_.reset();
    scratch_bytes_ = 0;
    kept_for_graphs_.clear();
    captured_ = false;
    ++generation_;
}

cudaStream_t engine::begin_own_capture() {
    if (!capture_stream_) {
        cudaStream_t s = nullptr;
        FFTCONV_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        capture_stream_.reset(s);
    }
    FFTCONV_CUBLAS_TRY(cublasSetStream(blas_.get(), capture_stream_.get()));
    captured_from_ = stream_;
    stream_ = capture_stream_.get();
    capturing_ = true;
    own_capture_ = true;
    return stream_;
}

void engine::end_own_capture() noexcept {
    stream_ = captured_from_;
    (void)cublasSetStream(blas_.get(), stream_);  // cannot fail for a handle and stream of ours
    capturing_ = false;
    own_capture_ = false;
}

void engine::execute(const fft_transform& p, fft_direction direction, void* in, void* out, void* work) {
    const cufftHandle h = *p.handle;
    FFTCONV_CUFFT_TRY(cufftSetStream(h, stream_));
    FFTCONV_CUFFT_TRY(cufftSetWorkArea(h, work));
    const bool forward = direction == fft_direction::forward;
    if (p.double_precision && forward)
        FFTCONV_CUFFT_TRY(cufftExecD2Z(h, static_cast<cufftDoubleReal*>(in), static_cast<cufftDoubleComplex*>(out)));
    else if (p.double_precision)
        FFTCONV_CUFFT_TRY(cufftExecZ2D(h, static_cast<cufftDoubleComplex*>(in), static_cast<cufftDoubleReal*>(out)));
    else if (forward)
        FFTCONV_CUFFT_TRY(cufftExecR2C(h, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out)));
    else
        FFTCONV_CUFFT_TRY(cufftExecC2R(h, static_cast<cufftComplex*>(in), static_cast<cufftReal*>(out)));
}

side_branch::side_branch(engine& e, bool active) : e_(e), active_(active) {
    if (active_) e_.order(e_.stream(), e_.side_stream(), side_event::fork);
}

void side_branch::join() {
    if (!active_) return;
    active_ = false;
    e_.order(e_.side_stream(), e_.stream(), side_event::join);
}

side_branch::~side_branch() {
    if (!active_) return;
    // A failure between fork and join: still make the main stream wait for
    // the side stream, so nothing of this call runs on after it returned.
    cudaEvent_t e = nullptr;
    if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess) {
        (void)cudaEventRecord(e, e_.side_stream());
        (void)cudaStreamWaitEvent(e_.stream(), e, 0);
        (void)cudaEventDestroy(e);
    } else {
        (void)cudaStreamSynchronize(e_.side_stream());
    }
}

}  // namespace fftconv::detail
