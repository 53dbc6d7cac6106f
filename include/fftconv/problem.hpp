// fftconv/problem.hpp — one conv2d call's extents, and their validation.
//
// Semantics are PyTorch's F.conv2d with stride 1, no padding, no dilation,
// no bias, groups = 1: a cross-correlation
//
//   y[b, o, i, j] = sum_{c, u, v} x[b, c, i + u, j + v] * w[o, c, u, v]
//
// with x float32 [batch, in_channels, height, width], w float32
// [out_channels, in_channels, kernel_extent, kernel_extent] and y float32
// [batch, out_channels, height - kernel_extent + 1, width - kernel_extent + 1],
// all dense NCHW (row-major, last index fastest) in device memory.
#pragma once

#include <cstdint>
#include <string>

namespace fftconv {

struct problem {
    std::int64_t batch = 1;
    std::int64_t in_channels = 1;
    std::int64_t out_channels = 1;
    std::int64_t height = 1;
    std::int64_t width = 1;
    std::int64_t kernel_extent = 1;

    constexpr std::int64_t out_height() const { return height - kernel_extent + 1; }
    constexpr std::int64_t out_width() const { return width - kernel_extent + 1; }
    constexpr std::int64_t input_elements() const { return batch * in_channels * height * width; }
    constexpr std::int64_t filter_elements() const {
        return out_channels * in_channels * kernel_extent * kernel_extent;
    }
    constexpr std::int64_t output_elements() const {
        return batch * out_channels * out_height() * out_width();
    }

    friend constexpr bool operator==(const problem&, const problem&) = default;
};

// The largest value any extent may take. Every extent fits a 32-bit int
// (cuFFT and cuBLAS take int dimensions) and every tensor's element count
// stays below 2^40, so 64-bit offsets never overflow in any product we form.
inline constexpr std::int64_t max_extent = (std::int64_t{1} << 31) - 1;
inline constexpr std::int64_t max_tensor_elements = std::int64_t{1} << 40;

// Throws fftconv::error(status::invalid_argument) naming the first field that
// is out of range and its value, e.g.
//   "fftconv: problem.kernel_extent = 9 exceeds problem.height = 8".
void validate(const problem& p);

// "batch=2 in_channels=128 out_channels=128 height=256 width=256 kernel_extent=16"
std::string to_string(const problem& p);

}  // namespace fftconv
