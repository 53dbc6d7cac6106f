// bench/progress.hpp — progress lines on stderr for long runs: what the
// bench is doing now and the seconds since it started, so a run of many
// shapes (or cuDNN's algorithm search, which can take seconds per shape)
// is never silent. stdout keeps the results alone.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace fftconv::bench {

inline void progress(const std::string& what) {
    static const auto start = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(stderr, "[%7.1f s] %s\n", seconds, what.c_str());
    std::fflush(stderr);
}

}  // namespace fftconv::bench
