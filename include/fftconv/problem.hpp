// fftconv/problem.hpp — one conv2d call's extents, and their validation.
//
// Semantics are PyTorch's
//   torch.nn.functional.conv2d(x, w, bias, stride=1, padding=(pad_h, pad_w), groups=groups)
// a cross-correlation of x, zero-padded by `padding` on each side, with w:
//
//   y[b, o, i, j] = bias[o] + sum_{c, u, v} xpad[b, g*Cg + c, i + u, j + v] * w[o, c, u, v]
//
// where Cg = in_channels / groups, g = o / (out_channels / groups) is o's
// group, c runs over [0, Cg), u over [0, kernel.height), v over
// [0, kernel.width), and xpad is x with `padding.height` zero rows above and
// below and `padding.width` zero columns left and right. Tensors are float32,
// dense NCHW (row-major, last index fastest) in device memory:
//   x    [batch, in_channels, height, width]
//   w    [out_channels, in_channels / groups, kernel.height, kernel.width]
//   bias [out_channels] (optional)
//   y    [batch, out_channels, out_height(), out_width()]
//
//   fftconv::problem p{.batch = 8, .in_channels = 128, .out_channels = 128,
//                      .height = 56, .width = 56, .kernel = 31,
//                      .padding = fftconv::same_padding(31), .groups = 128};  // depthwise 31 x 31, 'same'
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include <cstdint>
#include <string>

namespace fftconv {

// A height and a width. One number means both (a square kernel, equal
// padding on all four sides), as PyTorch's int kernel_size and padding do.
struct extent2d {
    std::int64_t height = 0;
    std::int64_t width = 0;

    constexpr extent2d() = default;
    constexpr extent2d(std::int64_t both) : height(both), width(both) {}  // NOLINT: implicit on purpose
    constexpr extent2d(std::int64_t h, std::int64_t w) : height(h), width(w) {}

    friend constexpr bool operator==(const extent2d&, const extent2d&) = default;
};

struct problem {
    std::int64_t batch = 1;
    std::int64_t in_channels = 1;
    std::int64_t out_channels = 1;
    std::int64_t height = 1;
    std::int64_t width = 1;
    extent2d kernel{1};    // filter extent: kernel.height x kernel.width
    extent2d padding{0};   // zeros added on each side: padding.height rows above and below, padding.width columns left and right
    std::int64_t groups = 1;  // in_channels and out_channels are divisible by it; in_channels = groups: depthwise
    // Only 1 is supported; other values are refused by validate(), by name.
    std::int64_t stride = 1;
    std::int64_t dilation = 1;

    constexpr std::int64_t padded_height() const { return height + 2 * padding.height; }
    constexpr std::int64_t padded_width() const { return width + 2 * padding.width; }
    constexpr std::int64_t out_height() const { return padded_height() - kernel.height + 1; }
    constexpr std::int64_t out_width() const { return padded_width() - kernel.width + 1; }
    // Input channels each output channel sums over.
    constexpr std::int64_t group_in_channels() const { return in_channels / groups; }
    constexpr std::int64_t group_out_channels() const { return out_channels / groups; }

    constexpr std::int64_t input_elements() const { return batch * in_channels * height * width; }
    constexpr std::int64_t filter_elements() const {
        return out_channels * group_in_channels() * kernel.height * kernel.width;
    }
    constexpr std::int64_t output_elements() const { return batch * out_channels * out_height() * out_width(); }

    friend constexpr bool operator==(const problem&, const problem&) = default;
};

// PyTorch's padding='same' for odd kernel extents: (k - 1) / 2 zeros on
// each side, so the output has the input's size. For an even extent 'same'
// needs one zero more on one side than on the other, which symmetric padding
// cannot say: this gives k / 2 - 1 and an output one row (column) smaller.
constexpr extent2d same_padding(extent2d kernel) { return {(kernel.height - 1) / 2, (kernel.width - 1) / 2}; }

// The largest value any extent may take. Every extent fits a 32-bit int
// (cuFFT and cuBLAS take int dimensions) and every tensor's element count
// stays below 2^40, so 64-bit offsets never overflow in any product we form.
inline constexpr std::int64_t max_extent = (std::int64_t{1} << 31) - 1;
inline constexpr std::int64_t max_tensor_elements = std::int64_t{1} << 40;
// The largest kernel extent: a tile holds the kernel both ways, and one
// T x T tile past 2^16 has over 2^32 elements (beyond any GPU's memory, and
// beyond the 32-bit tile arithmetic).
inline constexpr std::int64_t max_kernel_extent = std::int64_t{1} << 16;

// Throws fftconv::error(status::invalid_argument) naming the first field that
// is out of range and its value, e.g.
//   "fftconv: problem.kernel.height = 9 exceeds the padded height 8 (height 6 + 2 * padding.height 1)".
void validate(const problem& p);

// "batch=2 in_channels=128 out_channels=128 height=256 width=256 kernel=16x16"
// (padding, groups only when not their defaults).
std::string to_string(const problem& p);

}  // namespace fftconv
