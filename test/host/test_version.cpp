// The version: the macros of the generated fftconv/version.h, the runtime
// fftconv_version() / fftconv::version() of the library this test links,
// and meson.build's project version (FFTCONV_MESON_VERSION, passed by
// test/meson.build) are one and the same.
#include "doctest.hpp"

#include <cstdio>
#include <string>

#include "fftconv/fftconv.h"
#include "fftconv/fftconv.hpp"

#ifndef FFTCONV_MESON_VERSION
#error "test/meson.build passes FFTCONV_MESON_VERSION (meson.project_version())"
#endif

namespace {

std::string dotted(int major, int minor, int patch) {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

}  // namespace

TEST_CASE("the version macros are meson.build's project version") {
    CHECK(std::string(FFTCONV_VERSION_STRING) == FFTCONV_MESON_VERSION);
    CHECK(dotted(FFTCONV_VERSION_MAJOR, FFTCONV_VERSION_MINOR, FFTCONV_VERSION_PATCH) == FFTCONV_MESON_VERSION);
    CHECK(FFTCONV_VERSION == FFTCONV_VERSION_MAJOR * 10000 + FFTCONV_VERSION_MINOR * 100 + FFTCONV_VERSION_PATCH);
    static_assert(fftconv::header_version.major == FFTCONV_VERSION_MAJOR);
    static_assert(fftconv::header_version.minor == FFTCONV_VERSION_MINOR);
    static_assert(fftconv::header_version.patch == FFTCONV_VERSION_PATCH);
#if FFTCONV_VERSION < 100
#error "FFTCONV_VERSION is not usable in #if, or is older than 0.1.0"
#endif
}

TEST_CASE("the loaded library reports the headers' version") {
    CHECK(fftconv_version() == FFTCONV_VERSION);
    CHECK(std::string(fftconv_version_string()) == FFTCONV_VERSION_STRING);
    const fftconv::version_info v = fftconv::version();
    CHECK(v == fftconv::header_version);
    CHECK(dotted(v.major, v.minor, v.patch) == FFTCONV_MESON_VERSION);
    CHECK(std::string(fftconv::version_string()) == FFTCONV_MESON_VERSION);
    std::printf("fftconv %s (FFTCONV_VERSION %d)\n", fftconv::version_string(), fftconv_version());
}

TEST_CASE("version_info orders by major, then minor, then patch") {
    CHECK(fftconv::version_info{0, 9, 99} < fftconv::version_info{1, 0, 0});
    CHECK(fftconv::version_info{1, 2, 3} < fftconv::version_info{1, 3, 0});
    CHECK(fftconv::version_info{1, 2, 3} == fftconv::version_info{1, 2, 3});
    CHECK(fftconv::version_info{1, 2, 4} > fftconv::version_info{1, 2, 3});
}
