// Compile-time specialization is real: each compiled configuration launches
// kernels of its own (not the generic path's), a configuration of the
// caller's can be added to a context and is the code that runs, and every
// one of them meets the accuracy bar against float64.
#include "doctest.hpp"
#include "fftconv/detail/runtime/launch.hpp"

#include <algorithm>
#include <utility>
#include <string>
#include <vector>

#include "conv_check.hpp"
#include "dispatch/compiled_table.hpp"
#include "fftconv/specialize.cuh"

using namespace fftconv;

namespace {

// The kernels a call on `p` launches on `ctx`, checked against float64.
std::vector<const void*> launched_by(context& ctx, const problem& p, std::uint64_t seed) {
    std::vector<const void*> log;
    const detail::launch_recorder recording(log);
    testing::check_conv(ctx, p, seed);
    return log;
}

bool contains(const std::vector<const void*>& v, const void* k) { return std::find(v.begin(), v.end(), k) != v.end(); }

// A configuration of this test's own, not in the library's table.
constexpr tile_config fused_own{5, 6, 16};    // fused transforms (T = 16)
constexpr tile_config cufft_own{3, 4, 12};    // the cuFFT path (T = 12)

}  // namespace

TEST_CASE("each compiled configuration launches its own kernels, never the generic path's") {
    for (const specialization& entry : detail::compiled_specializations()) {
        const tile_config c = entry.config;
        CAPTURE(c.kernel_extent);
        CAPTURE(c.channels);
        CAPTURE(c.tile_extent);
        if (c.depthwise) continue;  // the next test case
        // 3 x 3 tiles per image, batch 4: 40 GEMM rows, so the tensor-core
        // GEMM (instantiated for the entry's channel count) runs too.
        const int out_tile = c.tile_extent - c.kernel_extent + 1;
        const problem p{4, c.channels, c.channels, c.kernel_extent - 1 + 3 * out_tile,
                        c.kernel_extent + 4 + 2 * out_tile, c.kernel_extent};
        context ctx;
        REQUIRE(ctx.plan(p).path == path_kind::compiled);
        const std::vector<const void*> own = entry.kernels();
        const std::vector<const void*> compiled = launched_by(ctx, p, 11);
        ctx.force_tile_extent(c.tile_extent);  // the generic path, same tile extent
        REQUIRE(ctx.plan(p).path == path_kind::generic);
        const std::vector<const void*> generic = launched_by(ctx, p, 11);
        REQUIRE(!compiled.empty());
        REQUIRE(!generic.empty());
        for (const void* k : compiled) {
            CHECK(contains(own, k));
            CHECK_FALSE(contains(generic, k));
        }
        for (const void* k : generic) CHECK_FALSE(contains(own, k));
        // Every kernel of the entry ran (filters, image, inverse, and the GEMM).
        for (const void* k : own) CHECK(contains(compiled, k));
    }
}

TEST_CASE("each compiled depthwise configuration runs its own filter transform and tile kernels") {
    // Two problems of the entry's (K, C): one tile per image and batch 2
    // (the tile pairs span samples: the kernel's variant for them), and
    // batch 3 (pairs within an image). Between them every kernel of the
    // entry runs; the generic path at the same tile extent runs none of
    // them. Off the radix-3 extents (whose filter DFT writes the kernel's
    // order itself) both paths also run the channel-major copy of the filter
    // spectrum, which is not a per-configuration kernel.
    for (const specialization& entry : detail::compiled_specializations()) {
        const tile_config c = entry.config;
        if (!c.depthwise) continue;
        CAPTURE(c.kernel_extent);
        CAPTURE(c.channels);
        CAPTURE(c.tile_extent);
        const std::vector<const void*> own = entry.kernels();
        std::vector<const void*> compiled_all;
        for (const std::int64_t batch : {2, 3}) {
            const std::int64_t size = c.tile_extent - c.kernel_extent / 2;  // one tile covers the padded image
            const problem p{.batch = batch, .in_channels = c.channels, .out_channels = c.channels, .height = size,
                            .width = size, .kernel = c.kernel_extent, .padding = c.kernel_extent / 2,
                            .groups = c.channels};
            CAPTURE(to_string(p));
            context ctx;
            REQUIRE(ctx.plan(p).path == path_kind::compiled);
            const std::vector<const void*> compiled = launched_by(ctx, p, 31 + std::uint64_t(batch));
            ctx.force_tile_extent(c.tile_extent);
            REQUIRE(ctx.plan(p).path == path_kind::generic);
            const std::vector<const void*> generic = launched_by(ctx, p, 31 + std::uint64_t(batch));
            REQUIRE(!compiled.empty());
            CHECK(compiled.size() == generic.size());
            for (const void* k : generic) CHECK_FALSE(contains(own, k));
            std::vector<const void*> shared_with_generic;  // distinct kernels (each call ran twice: two input kinds)
            for (const void* k : compiled)
                if (contains(generic, k) && !contains(shared_with_generic, k)) shared_with_generic.push_back(k);
            const bool radix3 = detail::tile_family_of(c.tile_extent).lines == detail::line_transform::radix3;
            CHECK(shared_with_generic.size() == (radix3 ? 0u : 1u));  // the channel-major copy
            compiled_all.insert(compiled_all.end(), compiled.begin(), compiled.end());
        }
        for (const void* k : own) CHECK(contains(compiled_all, k));
    }
}

// compiled_configs.hpp declares the library's entries extern: this
// translation unit names the library's functions (the symbol check
// check_extern_instantiations.py shows it compiles none of them itself).
template <std::size_t... I>
void check_library_instantiations(std::index_sequence<I...>) {
    const auto library = detail::compiled_specializations();
    REQUIRE(library.size() == sizeof...(I));
    const specialization mine[] = {specialize<detail::compiled_table[I]>()..., specialize<fused_own>()};
    for (std::size_t i = 0; i < library.size(); ++i) {
        CHECK((mine[i].run == library[i].run));
        CHECK((mine[i].transform_filter == library[i].transform_filter));
        CHECK(mine[i].kernels() == library[i].kernels());
    }
}

TEST_CASE("including specialize.cuh reuses the library's instantiations of its compiled configurations") {
    check_library_instantiations(std::make_index_sequence<detail::compiled_table.size()>{});
}

TEST_CASE("a configuration added to a context is found by its dispatch and is the code that runs") {
    for (const specialization& s : {specialize<fused_own>(), specialize<cufft_own>()}) {
        const tile_config c = s.config;
        CAPTURE(c.kernel_extent);
        CAPTURE(c.tile_extent);
        context ctx;
        const problem p{3, c.channels, c.channels, 37, 41, c.kernel_extent};
        CHECK(ctx.plan(p).path != path_kind::registered);
        ctx.add_specialization(s);
        const dispatch_decision d = ctx.plan(p);
        CHECK(d.path == path_kind::registered);
        CHECK(d.geometry.tile_extent() == c.tile_extent);
        const std::vector<const void*> own = s.kernels();
        const std::vector<const void*> ran = launched_by(ctx, p, 23);
        REQUIRE(!ran.empty());
        for (const void* k : ran) CHECK(contains(own, k));
        // A problem it does not fit still takes the dispatch's own path.
        const problem other{1, c.channels + 1, c.channels, 37, 41, c.kernel_extent};
        CHECK(ctx.plan(other).path != path_kind::registered);
        testing::check_conv(ctx, other, 5);
        // Filter reuse goes through it too.
        testing::check_conv(ctx, p, 29, [](context& cx, const problem& q, const float* x, const float* w, float* y) {
            const filter_spectrum spectrum = cx.transform_filter(q, w);
            CHECK(spectrum.geometry().tile_extent() == cx.plan(q).geometry.tile_extent());
            cx.conv2d(q, x, spectrum, y);
        });
    }
}

TEST_CASE("conv2d<Cfg> runs Cfg directly and refuses problems that do not fit it") {
    context ctx;
    const problem p{2, fused_own.channels, fused_own.channels, 30, 19, fused_own.kernel_extent};
    std::vector<const void*> log;
    {
        const detail::launch_recorder recording(log);
        testing::check_conv(ctx, p, 41, [](context& cx, const problem& q, const float* x, const float* w, float* y) {
            conv2d<fused_own>(cx, q, x, w, y);
        });
    }
    const std::vector<const void*> own = specialize<fused_own>().kernels();
    REQUIRE(!log.empty());
    for (const void* k : log) CHECK(contains(own, k));
    auto t = testing::make_conv_tensors(p, 1);
    const problem wrong{2, fused_own.channels, fused_own.channels, 30, 19, fused_own.kernel_extent + 1};
    CHECK_THROWS_WITH_AS(conv2d<fused_own>(ctx, wrong, t.x.data(), t.w.data(), t.y.data()),
                         doctest::Contains("does not fit the configuration"), error);
}
