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
#include "report.hpp"

namespace fftconv::bench {

// One shape a run measures.
struct run_shape {
    std::string role;  // "benchmark", "test" (leaderboard), or "custom" (--shape)
    problem shape;
    bool bias = false;  // the call adds a bias (out_channels floats, drawn from the seed)
    std::uint64_t seed = 0;
    bench::pass pass = bench::pass::forward;
};

inline constexpr const char* suite_leaderboard = "leaderboard";
inline constexpr const char* suite_depthwise = "depthwise";
inline constexpr const char* suite_backward = "backward";
inline constexpr std::array<const char*, 3> suite_names{suite_leaderboard, suite_depthwise, suite_backward};

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

// The backward suite: each shape's data gradient and filter gradient (no
// bias), B, Cin = Cout, H = W, K, padding, groups.
struct backward_shape {
    std::int64_t batch, channels, size, kernel, padding, groups;
    std::uint64_t seed;
    constexpr problem as_problem() const {
        return problem{.batch = batch, .in_channels = channels, .out_channels = channels, .height = size,
                       .width = size, .kernel = kernel, .padding = padding, .groups = groups};
    }
};

inline constexpr std::array<backward_shape, 6> backward_suite{{
    {4, 64, 128, 8, 0, 1, 72001},
    {4, 64, 128, 16, 0, 1, 72002},
    {2, 128, 256, 16, 0, 1, 72003},
    {1, 128, 256, 32, 0, 1, 72004},
    {64, 128, 56, 31, 15, 128, 72005},  // depthwise 'same'
    {8, 64, 256, 31, 15, 64, 72006},
}};

// The shapes of a suite named in suite_names (others: empty). Every shape of
// the depthwise suite is a "benchmark" shape: the totals are over all seven.
inline std::vector<run_shape> suite_shapes(std::string_view name) {
    std::vector<run_shape> shapes;
    if (name == suite_leaderboard) {
        for (const auto& s : reference::leaderboard) shapes.push_back({s.role, s.as_problem(), false, s.seed});
    } else if (name == suite_depthwise) {
        for (const auto& s : depthwise_suite) shapes.push_back({"benchmark", as_problem(s), true, s.seed});
    } else if (name == suite_backward) {
        for (const auto& s : backward_suite)
            for (const pass g : {pass::data_gradient, pass::filter_gradient})
                shapes.push_back({"benchmark", s.as_problem(), false, s.seed, g});
    }
    return shapes;
}

}  // namespace fftconv::bench
