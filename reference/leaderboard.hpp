// reference/leaderboard.hpp — the leaderboard shapes the project is measured
// on: 5 benchmark and 5 test shapes, inputs randn, Cout = Cin = channels,
// square images and kernels. The seeds are the leaderboard generator's; our
// own device generator takes them as its seed.
#pragma once

#include <array>
#include <cstdint>

#include "fftconv/problem.hpp"

namespace fftconv::reference {

struct leaderboard_shape {
    const char* role;  // "benchmark" or "test"
    int size;
    int kernel_extent;
    int channels;
    int batch;
    std::uint64_t seed;

    constexpr problem as_problem() const {
        return {batch, channels, channels, size, size, kernel_extent};
    }
};

inline constexpr std::array<leaderboard_shape, 10> leaderboard{{
    {"benchmark", 128, 8, 64, 4, 54352},
    {"benchmark", 128, 16, 64, 4, 93246},
    {"benchmark", 256, 16, 128, 2, 6256},
    {"benchmark", 256, 16, 128, 2, 8841},
    {"benchmark", 256, 32, 128, 1, 6252},
    {"test", 32, 4, 16, 1, 4242},
    {"test", 32, 4, 16, 2, 5236},
    {"test", 64, 4, 32, 1, 1001},
    {"test", 64, 8, 32, 2, 5531},
    {"test", 128, 8, 64, 1, 9173},
}};

}  // namespace fftconv::reference
