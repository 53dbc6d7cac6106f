// Accuracy against the float64 oracle: every compiled configuration, every
// leaderboard shape, and hundreds of seeded random problems through the
// generic path (odd sizes, H != W, Cin != Cout, K from 1 to the image); the
// GPU oracle itself is checked against the CPU one.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "conv_check.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/dispatch.hpp"
#include "leaderboard.hpp"

using namespace fftconv;

TEST_CASE("every compiled configuration on its leaderboard shape, and on an odd-sized image") {
    context ctx;
    for (const tile_config& c : compiled_configs()) {
        CAPTURE(c.kernel_extent);
        CAPTURE(c.channels);
        CAPTURE(c.tile_extent);
        const reference::leaderboard_shape* home = nullptr;  // the leaderboard's shapes are dense
        for (const auto& s : reference::leaderboard)
            if (s.kernel_extent == c.kernel_extent && s.channels == c.channels && !c.depthwise) home = &s;
        if (home != nullptr) {  // the default table's entries each have one
            REQUIRE(ctx.plan(home->as_problem()).path == path_kind::compiled);
            testing::check_conv(ctx, home->as_problem(), home->seed);
        }
        // Same configuration, an awkward image: partial tiles on both edges, H != W, batch 3.
        const problem odd{.batch = 3, .in_channels = c.channels, .out_channels = c.channels,
                          .height = c.kernel_extent + 45, .width = c.kernel_extent + 70, .kernel = c.kernel_extent,
                          .groups = c.depthwise ? c.channels : 1};
        REQUIRE(ctx.plan(odd).path == path_kind::compiled);
        REQUIRE(ctx.plan(odd).geometry.tile_extent() == c.tile_extent);
        testing::check_conv(ctx, odd, 77 + std::uint64_t(c.tile_extent));
    }
}

TEST_CASE("all ten leaderboard shapes") {
    context ctx;
    for (const auto& s : reference::leaderboard) {
        const reference::accuracy a = testing::check_conv(ctx, s.as_problem(), s.seed);
        std::printf("leaderboard %-9s size=%d K=%d C=%d B=%d: rel_l2=%.3g worst=%.3f of tolerance\n",
                    s.role, s.size, s.kernel_extent, s.channels, s.batch, a.relative_l2,
                    a.worst_fraction);
    }
}

TEST_CASE("seeded random problems through the dispatch's path, and small ones through the transforms too") {
    context ctx;
    std::mt19937_64 rng(20261130);
    auto uniform = [&](std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    };
    context fft;
    constexpr int count = 240;
    int direct = 0;
    double worst_l2 = 0, worst_fraction = 0;
    for (int i = 0; i < count; ++i) {
        problem p;
        p.batch = uniform(1, 3);
        p.in_channels = uniform(1, 24);
        p.out_channels = uniform(0, 3) == 0 ? p.in_channels : uniform(1, 24);
        p.height = uniform(1, 96);
        p.width = uniform(0, 3) == 0 ? p.height : uniform(1, 96);
        const std::int64_t largest = std::min(p.height, p.width);
        switch (i % 6) {  // spread K over its whole range, edges included
            case 0: p.kernel = 1; break;
            case 1: p.kernel = largest; break;  // a single output row or column
            case 2: p.kernel = uniform(1, std::min<std::int64_t>(largest, 5)); break;
            default: p.kernel = uniform(1, largest); break;
        }
        if (i % 10 == 9) p.height = p.width = p.kernel.height;  // 1 x 1 output
        reference::accuracy a = testing::check_conv(ctx, p, 1000 + std::uint64_t(i));
        const dispatch_decision d = ctx.plan(p);
        CHECK((d.path == path_kind::generic || d.path == path_kind::direct));
        if (d.path == path_kind::direct) {  // small problems: the transforms too, at the tile they would take
            ++direct;
            fft.force_tile_extent(d.geometry.tile_extent());
            a = testing::worse(a, testing::check_conv(fft, p, 5000 + std::uint64_t(i)));
        }
        worst_l2 = std::max(worst_l2, a.relative_l2);
        worst_fraction = std::max(worst_fraction, a.worst_fraction);
    }
    std::printf("%d random problems (%d on the direct dense kernel, checked on the transforms too): worst "
                "rel_l2=%.3g, worst element %.3f of tolerance\n",
                count, direct, worst_l2, worst_fraction);
}

TEST_CASE("the filter transform's zero stages: kernels at and past T/8, T/4 and T/2 of each fused tile") {
    // The fused filter transform transforms only the kernel's points of each
    // line (fft_in_registers_of_prefix), stages skipped by the kernel's width
    // along rows and its height along columns: square and rectangular
    // kernels on both sides of every threshold, each extent forced.
    for (const int tile : {16, 32, 64}) {
        context ctx;
        ctx.force_tile_extent(tile);
        std::vector<std::int64_t> extents;
        for (const int edge : {tile / 8, tile / 4, tile / 2})
            for (const int k : {edge - 1, edge, edge + 1})
                if (k >= 1) extents.push_back(k);
        for (std::size_t i = 0; i < extents.size(); ++i) {
            const std::int64_t kh = extents[i], kw = extents[(i * 5 + 2) % extents.size()];
            for (const extent2d kernel : {extent2d{kh, kh}, extent2d{kh, kw}}) {
                problem p{2, 3, 5, 2 * tile + 3, 2 * tile - 5, kernel};
                CAPTURE(to_string(p));
                CAPTURE(tile);
                REQUIRE(ctx.plan(p).geometry.tile_extent() == tile);
                testing::check_conv(ctx, p, 7000 + std::uint64_t(tile) * 64 + i);
            }
        }
    }
}

TEST_CASE("large images, up to 1024 x 1024, and large kernels") {
    context ctx;
    for (const problem& p : {problem{1, 3, 4, 1024, 1024, 7},
                             problem{2, 2, 2, 1024, 1000, 33},
                             problem{1, 4, 2, 1024, 1024, 1},
                             problem{1, 2, 3, 300, 301, 300},
                             problem{1, 1, 1, 1024, 1024, 1024}}) {
        const reference::accuracy a = testing::check_conv(ctx, p, 4242);
        std::printf("%s (tile %d): rel_l2=%.3g worst=%.3f\n", to_string(p).c_str(),
                    ctx.plan(p).geometry.tile_extent(), a.relative_l2, a.worst_fraction);
    }
}

TEST_CASE("the GPU oracle agrees with the CPU oracle, and fftconv with both, on small problems") {
    context ctx;
    std::mt19937_64 rng(7);
    for (int i = 0; i < 12; ++i) {
        auto pick = [&](std::int64_t lo, std::int64_t hi) {
            return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
        };
        problem p{pick(1, 2), pick(1, 5), pick(1, 5), pick(4, 20), pick(4, 20), 1};
        p.kernel = pick(1, std::min(p.height, p.width));
        CAPTURE(to_string(p));
        auto x = reference::make_device_array<float>(p.input_elements());
        auto w = reference::make_device_array<float>(p.filter_elements());
        auto y = reference::make_device_array<float>(p.output_elements());
        auto exact = reference::make_device_array<double>(p.output_elements());
        reference::fill_normal(x.data(), x.size, 300 + std::uint64_t(i), ctx.stream());
        reference::fill_normal(w.data(), w.size, 400 + std::uint64_t(i), ctx.stream());
        reference::fill_nan(y.data(), y.size, ctx.stream());
        ctx.conv2d(p, x.data(), w.data(), y.data());
        reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
        const std::vector<double> cpu =
            reference::direct_conv_cpu(p, reference::to_host(x.data(), x.size), reference::to_host(w.data(), w.size));
        const std::vector<double> gpu = reference::to_host(exact.data(), exact.size);
        REQUIRE(cpu.size() == gpu.size());
        double worst = 0;
        for (std::size_t k = 0; k < cpu.size(); ++k)
            worst = std::max(worst, std::abs(cpu[k] - gpu[k]) / (1.0 + std::abs(cpu[k])));
        CHECK(worst < 1e-12);  // both exact to double rounding (GPU may fuse multiply-adds)
        const reference::accuracy a = reference::compare(reference::to_host(y.data(), y.size), cpu);
        CHECK(a.passes());
    }
}
