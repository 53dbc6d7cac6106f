// bench/suites.hpp — the named shape lists of --suite, and what one shape of
// a run is: a problem, whether the call has a bias, its role and its seed.
//
//   leaderboard (default)  the 10 leaderboard shapes (reference/leaderboard.hpp):
//                          dense, square kernels, no padding, no bias
//   depthwise              7 depthwise 'same' convolutions with a bias:
//                          Cout = Cin = groups = C, H = W, padding K / 2
//                          (K odd: the output has the input's size)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fftconv/problem.hpp"
#include "leaderboard.hpp"

namespace fftconv::bench {

// One shape a run measures.
struct run_shape {
    std::string role;  // "benchmark", "test" (leaderboard), or "custom" (--shape)
    problem shape;
    bool bias = false;  // the call adds a bias (out_channels floats, drawn from the seed)
    std::uint64_t seed = 0;
};

inline constexpr const char* suite_leaderboard = "leaderboard";
inline constexpr const char* suite_depthwise = "depthwise";
inline constexpr std::array<const char*, 2> suite_names{suite_leaderboard, suite_depthwise};

struct depthwise_shape {
    std::int64_t batch, channels, size, kernel;
    std::uint64_t seed;
};

// B, C, H = W, K. Seeds are ours (no leaderboard generator draws these).
inline constexpr std::array<depthwise_shape, 7> depthwise_suite{{
    {64, 128, 56, 31, 71001},
    {64, 256, 28, 29, 71002},
    {64, 512, 14, 27, 71003},
    {64, 1024, 7, 13, 71004},
    {32, 128, 56, 51, 71005},
    {32, 256, 28, 49, 71006},
    {8, 64, 256, 31, 71007},
}};

constexpr problem as_problem(const depthwise_shape& s) {
    return problem{.batch = s.batch, .in_channels = s.channels, .out_channels = s.channels, .height = s.size,
                   .width = s.size, .kernel = s.kernel, .padding = s.kernel / 2, .groups = s.channels};
}

// The shapes of a suite named in suite_names (others: empty). Every shape of
// the depthwise suite is a "benchmark" shape: the totals are over all seven.
inline std::vector<run_shape> suite_shapes(std::string_view name) {
    std::vector<run_shape> shapes;
    if (name == suite_leaderboard) {
        for (const auto& s : reference::leaderboard) shapes.push_back({s.role, s.as_problem(), false, s.seed});
    } else if (name == suite_depthwise) {
        for (const auto& s : depthwise_suite) shapes.push_back({"benchmark", as_problem(s), true, s.seed});
    }
    return shapes;
}

}  // namespace fftconv::bench
