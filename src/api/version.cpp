// The version of the library as built: the macros of the generated
// fftconv/version.h (meson.build's project version), compiled in here so a
// program can ask the library it actually loaded.
#include "fftconv/version.hpp"

static_assert(FFTCONV_VERSION_MINOR < 100 && FFTCONV_VERSION_PATCH < 100,
              "FFTCONV_VERSION encodes MINOR and PATCH in two decimal digits each");

extern "C" int fftconv_version(void) { return FFTCONV_VERSION; }

extern "C" const char* fftconv_version_string(void) { return FFTCONV_VERSION_STRING; }

namespace fftconv {

version_info version() noexcept {
    const int v = fftconv_version();
    return {v / 10000, v / 100 % 100, v % 100};
}

const char* version_string() noexcept { return fftconv_version_string(); }

}  // namespace fftconv
