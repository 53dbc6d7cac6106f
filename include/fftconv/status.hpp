// fftconv/status.hpp — how fftconv reports failure.
//
// Every failing call throws fftconv::error. Its code() says which kind of
// failure it was (the same codes the C ABI returns), what() names the field
// or the library call and the value involved. A call that throws
// invalid_argument or out_of_memory has enqueued nothing and not written y;
// after a cuda_error, cufft_error or cublas_error raised by work already
// enqueued, y may hold partial results (context.hpp, "Checks").
#pragma once

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
    out_of_memory = 5,     // a device allocation failed
    internal_error = 6,    // anything else (a bug: please report it)
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
