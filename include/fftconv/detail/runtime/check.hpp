// fftconv/detail/runtime/check.hpp — every CUDA, cuFFT and cuBLAS call goes through
// one of these macros, in every build type. A failure throws fftconv::error
// with "file:line: call: CODE (meaning)". The throw helpers are defined in
// src/api/status.cpp, beside fftconv::error.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cufft.h>

#include "fftconv/status.hpp"

namespace fftconv::detail {

[[noreturn]] void throw_cuda(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_cufft(cufftResult code, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas(cublasStatus_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_invalid(const std::string& message);

const char* cufft_result_name(cufftResult code) noexcept;

}  // namespace fftconv::detail

#define FFTCONV_CUDA_TRY(call)                                                          \
    do {                                                                                \
        const cudaError_t fftconv_code_ = (call);                                       \
        if (fftconv_code_ != cudaSuccess)                                               \
            ::fftconv::detail::throw_cuda(fftconv_code_, #call, __FILE__, __LINE__);    \
    } while (0)

#define FFTCONV_CUFFT_TRY(call)                                                         \
    do {                                                                                \
        const cufftResult fftconv_code_ = (call);                                       \
        if (fftconv_code_ != CUFFT_SUCCESS)                                             \
            ::fftconv::detail::throw_cufft(fftconv_code_, #call, __FILE__, __LINE__);   \
    } while (0)

#define FFTCONV_CUBLAS_TRY(call)                                                        \
    do {                                                                                \
        const cublasStatus_t fftconv_code_ = (call);                                    \
        if (fftconv_code_ != CUBLAS_STATUS_SUCCESS)                                     \
            ::fftconv::detail::throw_cublas(fftconv_code_, #call, __FILE__, __LINE__);  \
    } while (0)

// After a kernel launch: a bad configuration shows up here, not at the next call.
#define FFTCONV_CHECK_LAUNCH() FFTCONV_CUDA_TRY(cudaGetLastError())
