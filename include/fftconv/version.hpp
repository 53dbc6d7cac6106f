// fftconv/version.hpp — the version (headers and loaded library), and the
// C++20 check: every C++ header of fftconv includes this one first, so a
// compiler in an older mode stops at the #error below instead of at the
// first C++20 construct (nvcc defaults to C++17). The C header
// fftconv/fftconv.h needs no C++20.
//
//   fftconv::version()         // {major, minor, patch} of the library loaded at run time
//   fftconv::header_version    // the same from these headers (constexpr)
//   fftconv::version_string()  // "MAJOR.MINOR.PATCH"
#pragma once

#if !defined(__cplusplus) || (defined(_MSVC_LANG) ? _MSVC_LANG : __cplusplus) < 202002L
#error "fftconv's C++ headers need C++20: compile with -std=c++20 (nvcc: -std=c++20; CMake: link fftconv::fftconv, or cxx_std_20/cuda_std_20; Meson: cpp_std=c++20 and, for .cu files, cuda_std=c++20). The C ABI, fftconv/fftconv.h, needs no C++20."
// A missing header is fatal where #error is not (GCC, Clang, MSVC): the
// compile stops here instead of listing the C++20 constructs that follow.
#include "fftconv/stop: C++20 is required"
#else

#include "fftconv/version.h"

namespace fftconv {

struct version_info {
    int major = 0;
    int minor = 0;
    int patch = 0;
    friend constexpr bool operator==(const version_info&, const version_info&) = default;
    friend constexpr auto operator<=>(const version_info&, const version_info&) = default;
};

// The version these headers belong to (FFTCONV_VERSION_MAJOR/MINOR/PATCH).
inline constexpr version_info header_version{FFTCONV_VERSION_MAJOR, FFTCONV_VERSION_MINOR,
                                             FFTCONV_VERSION_PATCH};

// The version of the library loaded at run time (fftconv_version() of the C
// ABI); != header_version when a program runs against another build.
version_info version() noexcept;
// "MAJOR.MINOR.PATCH" of the loaded library (fftconv_version_string()).
const char* version_string() noexcept;

}  // namespace fftconv

#endif
