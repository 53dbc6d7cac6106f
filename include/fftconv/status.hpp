// fftconv/status.hpp — how fftconv reports failure.
//
// Every failure fftconv detects throws fftconv::error; what() names the field
// or the library call and the value involved. (A failed host allocation
// propagates as std::bad_alloc, which the C ABI returns as out_of_memory.)
//
// code() returns the status the error was constructed with, nothing more.
// The library constructs them by cause, not by which library failed:
//   invalid_argument  refused before any work: a problem field, pointer or
//                     option out of range, a context used on another device,
//                     a call that would make a cuFFT plan or allocate during capture
//   cuda_error        a CUDA runtime call failed; also a CUDA error left
//                     pending by the caller's earlier work (named, not
//                     cleared), or a device this build has no code for
//   cufft_error       a cuFFT call failed
//   cublas_error      a cuBLAS call failed
//   out_of_memory     an allocation failed, whoever reported it:
//                     cudaErrorMemoryAllocation, CUFFT_ALLOC_FAILED and
//                     CUBLAS_STATUS_ALLOC_FAILED become out_of_memory, not
//                     the library's own code (src/api/status.cpp); also a
//                     workspace limit below the problem's smallest pass
// The library never throws success or internal_error; internal_error is what
// the C ABI returns for an exception that is not a fftconv::error. The C ABI
// returns code() unchanged (same numbers, fftconv.h).
//
// A call that throws invalid_argument or out_of_memory has enqueued nothing
// and not written y; after a cuda_error, cufft_error or cublas_error raised by
// work already enqueued, y may hold partial results (context.hpp, "Checks").
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include <stdexcept>
#include <string>

namespace fftconv {

// Kept numerically equal to the C ABI's fftconv_status (fftconv.h).
enum class status : int {
    success = 0,
    invalid_argument = 1,  // a problem field, pointer or option is out of range
    cuda_error = 2,        // a CUDA runtime call failed
    cufft_error = 3,       // a cuFFT call failed
    cublas_error = 4,      // a cuBLAS call failed
    out_of_memory = 5,     // an allocation failed, or the workspace limit is below the smallest pass
    internal_error = 6,    // C ABI only: any other exception (a bug: please report it)
};

// A short, stable name for a status ("invalid_argument", ...).
const char* to_string(status s) noexcept;

class error : public std::runtime_error {
public:
    error(status s, const std::string& message) : std::runtime_error(message), status_(s) {}
    status code() const noexcept { return status_; }

private:
    status status_;
};

}  // namespace fftconv
