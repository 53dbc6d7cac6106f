// src/engine.cpp — plans, workspace and the spectral GEMM of a context.
#include <algorithm>
#include <climits>
#include <string>

#include "fftconv/detail/check.hpp"
#include "fftconv/detail/engine.hpp"
#include "fftconv/detail/tiling.hpp"

namespace fftconv::detail {
namespace {

// cuBLAS's recommended user workspace on Hopper. Ours, not its default pool,
// so that a captured graph never asks cuBLAS to allocate.
constexpr std::size_t blas_workspace_bytes = std::size_t{32} << 20;

}  // namespace

device_buffer allocate_device(std::size_t bytes, const char* what) {
    void* p = nullptr;
    const cudaError_t code = cudaMalloc(&p, std::max<std::size_t>(bytes, 1));
    if (code != cudaSuccess) {
        (void)cudaGetLastError();  // clear the sticky-free allocation error
        throw error(code == cudaErrorMemoryAllocation ? status::out_of_memory : status::cuda_error,
                    std::string("fftconv: allocating ") + std::to_string(bytes) + " bytes for " +
                        what + " failed: " + cudaGetErrorName(code) + " (" +
                        cudaGetErrorString(code) + ")");
    }
    return device_buffer(p);
}

engine::engine(cudaStream_t stream) : stream_(stream) {
    FFTCONV_CUDA_TRY(cudaGetDevice(&device_));
    cublasHandle_t h = nullptr;
    FFTCONV_CUBLAS_TRY(cublasCreate(&h));
    blas_.reset(h);
    FFTCONV_CUBLAS_TRY(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));  // FP32 products, never TF32
    blas_workspace_ = allocate_device(blas_workspace_bytes, "the cuBLAS workspace");
    FFTCONV_CUBLAS_TRY(cublasSetWorkspace(h, blas_workspace_.get(), blas_workspace_bytes));
    FFTCONV_CUBLAS_TRY(cublasSetStream(h, stream_));
    cudaStream_t side = nullptr;
    FFTCONV_CUDA_TRY(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
    side_.reset(side);
    for (auto& event : events_) {
        cudaEvent_t e = nullptr;
        FFTCONV_CUDA_TRY(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
        event.reset(e);
    }
}

void engine::order(cudaStream_t signaller, cudaStream_t waiter, int which) {
    FFTCONV_CUDA_TRY(cudaEventRecord(events_[which].get(), signaller));
    FFTCONV_CUDA_TRY(cudaStreamWaitEvent(waiter, events_[which].get(), 0));
}

void engine::set_stream(cudaStream_t stream) {
    FFTCONV_CUBLAS_TRY(cublasSetStream(blas_.get(), stream));
    stream_ = stream;
}

const fft_plan& engine::plan(const fft_plan_key& key) {
    if (auto it = plans_.find(key); it != plans_.end()) return it->second;

    fft_plan made;
    made.handle.reset(new cufftHandle{});
    FFTCONV_CUFFT_TRY(cufftCreate(made.handle.get()));
    const cufftHandle h = *made.handle;
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
        forward ? key.complex_distance : real_distance, forward ? CUFFT_R2C : CUFFT_C2R, key.batch,
        &made.work_bytes));
    return plans_.emplace(key, std::move(made)).first->second;
}

void* engine::workspace(std::size_t bytes) {
    if (bytes > workspace_bytes_) {
        workspace_.reset();  // cudaFree waits for the device: no call still uses it
        workspace_bytes_ = 0;
        workspace_ = allocate_device(bytes, "the fftconv workspace");
        workspace_bytes_ = bytes;
    }
    return workspace_.get();
}

void engine::execute(const fft_plan& p, fft_direction direction, void* in, void* out, void* work) {
    const cufftHandle h = *p.handle;
    FFTCONV_CUFFT_TRY(cufftSetStream(h, stream_));
    FFTCONV_CUFFT_TRY(cufftSetWorkArea(h, work));
    if (direction == fft_direction::forward)
        FFTCONV_CUFFT_TRY(cufftExecR2C(h, static_cast<cufftReal*>(in), static_cast<cufftComplex*>(out)));
    else
        FFTCONV_CUFFT_TRY(cufftExecC2R(h, static_cast<cufftComplex*>(in), static_cast<cufftReal*>(out)));
}

// Each spectrum is written bin-major: transform n's bin f lands at f * batch + n,
// so complex_stride = batch and complex_distance = 1.
fft_plan_key filter_plan_key(const tiling& t) {
    return {fft_direction::forward, t.shape.tile_extent, t.filter_matrix, t.filter_matrix, 1};
}

fft_plan_key input_plan_key(const problem& p, const tiling& t) {
    const std::int64_t batch = p.in_channels * t.gemm_rows;
    return {fft_direction::forward, t.shape.tile_extent, batch, batch, 1};
}

fft_plan_key output_plan_key(const problem& p, const tiling& t) {
    const std::int64_t batch = p.out_channels * t.gemm_rows;
    return {fft_direction::inverse, t.shape.tile_extent, batch, batch, 1};
}

void check_tiling_limits(const problem& p, const tiling& t) {
    auto refuse = [&](const std::string& what, double value, double limit) {
        throw_invalid("fftconv: " + what + " = " + std::to_string((long double)value) +
                      " exceeds the supported " + std::to_string((long double)limit) +
                      " for problem " + to_string(p) + " with tile extent " +
                      std::to_string(t.shape.tile_extent));
    };
    if (t.gemm_rows > INT_MAX) refuse("batch * tiles per image (GEMM rows)", double(t.gemm_rows), INT_MAX);
    const double bytes = 4.0 * double(t.real_elements) +
                         8.0 * double(t.input_spectrum_elements + t.filter_spectrum_elements +
                                      t.output_spectrum_elements);
    const double limit = double(std::int64_t{1} << 50);
    if (bytes > limit) refuse("workspace bytes", bytes, limit);
}

std::size_t workspace_bytes(engine& e, const problem& p, const tiling& t) {
    check_tiling_limits(p, t);
    if (t.fused) return t.fft_work_offset();
    const std::size_t fft_work = std::max({e.plan(filter_plan_key(t)).work_bytes,
                                           e.plan(input_plan_key(p, t)).work_bytes,
                                           e.plan(output_plan_key(p, t)).work_bytes});
    return t.fft_work_offset() + align_up(fft_work);
}

pipeline_buffers prepare(engine& e, const problem& p, const tiling& t) {
    auto* base = static_cast<char*>(e.workspace(workspace_bytes(e, p, t)));
    return pipeline_buffers{
        reinterpret_cast<float*>(base + t.real_offset()),
        reinterpret_cast<cufftComplex*>(base + t.input_spectrum_offset()),
        reinterpret_cast<cufftComplex*>(base + t.filter_spectrum_offset()),
        reinterpret_cast<cufftComplex*>(base + t.output_spectrum_offset()),
        base + t.fft_work_offset(),
        t.fused ? nullptr : &e.plan(filter_plan_key(t)),
        t.fused ? nullptr : &e.plan(input_plan_key(p, t)),
        t.fused ? nullptr : &e.plan(output_plan_key(p, t)),
    };
}

void multiply_spectra(engine& e, const problem& p, const tiling& t, const cufftComplex* filter,
                      const pipeline_buffers& b) {
    multiply_spectra(e, p, t, filter, b, 0, p.out_channels);
}

void multiply_spectra(engine& e, const problem& p, const tiling& t, const cufftComplex* filter,
                      const pipeline_buffers& b, std::int64_t first, std::int64_t last) {
    // Column-major per bin: input M x in (ld M); the filter spectrum is stored
    // [in][out], i.e. an out x in matrix, and CUBLAS_OP_C turns it into the
    // in x out conj(W) that cross-correlation needs, at no cost. Output
    // channels [first, last) are rows first.. of that matrix and columns
    // first.. of the output.
    const cuComplex one{1.0f, 0.0f};
    const cuComplex zero{0.0f, 0.0f};
    const int rows = int(t.gemm_rows);
    FFTCONV_CUBLAS_TRY(cublasCgemmStridedBatched(
        e.blas(), CUBLAS_OP_N, CUBLAS_OP_C, rows, int(last - first), int(p.in_channels), &one,
        b.input_spectrum, rows, t.input_bin_stride, filter + first, int(p.out_channels),
        t.filter_bin_stride, &zero, b.output_spectrum + first * t.gemm_rows, rows, t.output_bin_stride,
        t.shape.freq_bins()));
}

}  // namespace fftconv::detail
