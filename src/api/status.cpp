// src/api/status.cpp — status names and the throw helpers behind the TRY macros (status.hpp, detail/runtime/check.hpp).
#include <string>

#include "fftconv/detail/runtime/check.hpp"

namespace fftconv {

const char* to_string(status s) noexcept {
    switch (s) {
        case status::success: return "success";
        case status::invalid_argument: return "invalid_argument";
        case status::cuda_error: return "cuda_error";
        case status::cufft_error: return "cufft_error";
        case status::cublas_error: return "cublas_error";
        case status::out_of_memory: return "out_of_memory";
        case status::internal_error: return "internal_error";
    }
    return "unknown_status";
}

namespace detail {
namespace {

std::string where(const char* call, const char* file, int line) {
    return std::string(file) + ":" + std::to_string(line) + ": " + call + ": ";
}

}  // namespace

const char* cufft_result_name(cufftResult code) noexcept {
    switch (code) {
        case CUFFT_SUCCESS: return "CUFFT_SUCCESS";
        case CUFFT_INVALID_PLAN: return "CUFFT_INVALID_PLAN (the plan handle is not valid)";
        case CUFFT_ALLOC_FAILED: return "CUFFT_ALLOC_FAILED (cuFFT could not allocate GPU or host memory)";
        case CUFFT_INVALID_VALUE: return "CUFFT_INVALID_VALUE (a pointer or layout argument is invalid)";
        case CUFFT_INTERNAL_ERROR: return "CUFFT_INTERNAL_ERROR (driver or internal cuFFT failure)";
        case CUFFT_EXEC_FAILED: return "CUFFT_EXEC_FAILED (the transform failed to launch on the GPU)";
        case CUFFT_SETUP_FAILED: return "CUFFT_SETUP_FAILED (the cuFFT library failed to initialize)";
        case CUFFT_INVALID_SIZE: return "CUFFT_INVALID_SIZE (a transform size or batch is not supported)";
        case CUFFT_INVALID_TYPE: return "CUFFT_INVALID_TYPE (the transform type is not valid)";
        case CUFFT_UNALIGNED_DATA: return "CUFFT_UNALIGNED_DATA (data is not suitably aligned)";
        case CUFFT_INVALID_DEVICE: return "CUFFT_INVALID_DEVICE (plan made on another device)";
        case CUFFT_NO_WORKSPACE: return "CUFFT_NO_WORKSPACE (no work area was given to the plan)";
        case CUFFT_NOT_IMPLEMENTED: return "CUFFT_NOT_IMPLEMENTED";
        case CUFFT_NOT_SUPPORTED: return "CUFFT_NOT_SUPPORTED (this layout or type is not supported)";
        case CUFFT_MISSING_DEPENDENCY: return "CUFFT_MISSING_DEPENDENCY (a library cuFFT needs is missing)";
        case CUFFT_NVRTC_FAILURE: return "CUFFT_NVRTC_FAILURE (run-time compilation failed)";
        case CUFFT_NVJITLINK_FAILURE: return "CUFFT_NVJITLINK_FAILURE (JIT linking failed)";
        case CUFFT_NVSHMEM_FAILURE: return "CUFFT_NVSHMEM_FAILURE";
        default: return "unknown cufftResult";
    }
}

void throw_cuda(cudaError_t code, const char* call, const char* file, int line) {
    const status s = code == cudaErrorMemoryAllocation ? status::out_of_memory : status::cuda_error;
    throw error(s, where(call, file, line) + cudaGetErrorName(code) + " (" +
                       cudaGetErrorString(code) + ")");
}

void throw_cufft(cufftResult code, const char* call, const char* file, int line) {
    const status s = code == CUFFT_ALLOC_FAILED ? status::out_of_memory : status::cufft_error;
    throw error(s, where(call, file, line) + cufft_result_name(code));
}

void throw_cublas(cublasStatus_t code, const char* call, const char* file, int line) {
    const status s = code == CUBLAS_STATUS_ALLOC_FAILED ? status::out_of_memory : status::cublas_error;
    throw error(s, where(call, file, line) + cublasGetStatusName(code) + " (" +
                       cublasGetStatusString(code) + ")");
}

void throw_invalid(const std::string& message) { throw error(status::invalid_argument, message); }

}  // namespace detail
}  // namespace fftconv
