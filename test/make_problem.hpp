// test/make_problem.hpp — a problem from its fields in the order the tests
// list them: batch, input and output channels, image height and width,
// kernel, padding (per side), groups.
#pragma once

#include <cstdint>

#include "fftconv/problem.hpp"

namespace fftconv::testing {

inline problem make(std::int64_t batch, std::int64_t in, std::int64_t out, std::int64_t h, std::int64_t w,
                    extent2d kernel, extent2d padding, std::int64_t groups) {
    return {.batch = batch, .in_channels = in, .out_channels = out, .height = h, .width = w, .kernel = kernel,
            .padding = padding, .groups = groups};
}

}  // namespace fftconv::testing
