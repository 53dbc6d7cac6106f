// The gradients (context::conv2d_backward_data / conv2d_backward_filter)
// against their float64 definitions (reference.hpp: data_gradient_gpu,
// filter_gradient_gpu), on random-normal and positive inputs: every operator
// variant — dense, groups, depthwise with channel multipliers, padding
// (none, 'same', even kernels, beyond the kernel), rectangular kernels, batch
// 1..8, odd sizes, fused and cuFFT tile extents. Bars: the data gradient
// relative L2 <= 5e-7, the filter gradient <= 1e-6, the bias gradient the
// elementwise bar; every element within 1e-3 + 1e-3 |exact|.
#include "doctest.hpp"

#include <cstdint>
#include <string>

#include "conv_check.hpp"

using namespace fftconv;

namespace {

problem make(std::int64_t batch, std::int64_t in, std::int64_t out, std::int64_t h, std::int64_t w, extent2d kernel,
             extent2d padding, std::int64_t groups) {
    return {.batch = batch, .in_channels = in, .out_channels = out, .height = h, .width = w, .kernel = kernel,
            .padding = padding, .groups = groups};
}

}  // namespace

TEST_CASE("data, filter and bias gradients of every operator variant against float64") {
    context ctx;
    std::uint64_t seed = 3000;
    double worst_dx = 0, worst_dw = 0;
    for (const problem& p : {
             make(2, 8, 8, 37, 29, 7, 0, 1),                          // dense, valid
             make(2, 8, 6, 37, 29, 7, same_padding(7), 1),            // 'same', Cin != Cout, odd sizes
             make(1, 6, 10, 20, 33, 6, same_padding(6), 2),           // even K, groups 2
             make(3, 8, 8, 17, 17, 5, {9, 2}, 4),                     // padding beyond the kernel (rows), groups 4
             make(2, 12, 12, 31, 30, 9, same_padding(9), 12),         // depthwise
             make(1, 6, 12, 25, 19, 7, same_padding(7), 6),           // depthwise, channel multiplier 2
             make(8, 4, 6, 9, 11, 3, 1, 2),                           // batch 8, small image
             make(2, 4, 4, 30, 41, 1, 0, 1),                          // 1 x 1
             make(2, 6, 6, 40, 37, {1, 9}, same_padding({1, 9}), 6),  // 1 x K depthwise
             make(2, 6, 4, 40, 37, {13, 3}, {6, 1}, 2),               // K x 3, grouped
             make(2, 16, 16, 64, 64, 31, 15, 16),                     // RepLKNet-like depthwise 31 x 31
             make(2, 32, 32, 48, 48, 16, 0, 1),                       // dense K = 16 (leaderboard-like)
             make(1, 3, 3, 9, 9, 9, 0, 3),                            // kernel = image
         }) {
        CAPTURE(to_string(p));
        for (const auto kind : {reference::input_kind::normal, reference::input_kind::uniform}) {
            const testing::gradient_accuracy a = testing::check_gradients(ctx, p, seed += 2, kind);
            worst_dx = std::max(worst_dx, a.data.relative_l2);
            worst_dw = std::max(worst_dw, a.filter.relative_l2);
        }
    }
    MESSAGE("worst relative L2: dx ", worst_dx, ", dw ", worst_dw);
}

TEST_CASE("gradients refuse bad operands before anything runs") {
    context ctx;
    const problem p = make(1, 2, 2, 8, 8, 3, 1, 1);
    auto a = reference::make_device_array<float>(1 << 12);
    CHECK_THROWS_WITH_AS(ctx.conv2d_backward_data(p, nullptr, a.data(), a.data()), doctest::Contains("dy is a null pointer"),
                         fftconv::error);
    CHECK_THROWS_WITH_AS(ctx.conv2d_backward_filter(p, a.data(), a.data(), nullptr), doctest::Contains("dw is a null pointer"),
                         fftconv::error);
    problem bad = p;
    bad.groups = 3;
    CHECK_THROWS_AS(ctx.conv2d_backward_data(bad, a.data(), a.data(), a.data()), fftconv::error);
    std::vector<float> host(16);
    CHECK_THROWS_WITH_AS(ctx.conv2d_backward_filter(p, host.data(), a.data(), a.data()), doctest::Contains("is host memory"),
                         fftconv::error);
}
