// The context's contract: filter reuse, streams, CUDA-graph capture (no
// allocation or synchronization after warm-up), errors that leave the output
// untouched, and configurations compiled by user code.
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "conv_check.hpp"
#include "fftconv/detail/runtime/call_graphs.hpp"
#include "fftconv/detail/tiling/pass_schedule.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"
#include "fftconv/specialize.cuh"

using namespace fftconv;

namespace {

void filter_twice(context& ctx, const problem& p, const float* x, const float* w, float* y) {
    const filter_spectrum spectrum = ctx.transform_filter(p, w);
    ctx.conv2d(p, x, spectrum, y);
}

// The plain call and the call reusing its transformed filter, on the same
// inputs (x from `seed`, w from seed + 1), give the same bits; `inspect`
// sees the spectrum.
template <class Inspect>
void check_reuse_same_bits(context& ctx, const problem& p, std::uint64_t seed, Inspect&& inspect) {
    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto y1 = reference::make_device_array<float>(p.output_elements());
    auto y2 = reference::make_device_array<float>(p.output_elements());
    reference::fill_normal(x.data(), x.size, seed, ctx.stream());
    reference::fill_normal(w.data(), w.size, seed + 1, ctx.stream());
    ctx.conv2d(p, x.data(), w.data(), y1.data());
    const filter_spectrum s = ctx.transform_filter(p, w.data());
    inspect(s);
    ctx.conv2d(p, x.data(), s, y2.data());
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
    const auto h1 = reference::to_host(y1.data(), y1.size);
    const auto h2 = reference::to_host(y2.data(), y2.size);
    CHECK(std::memcmp(h1.data(), h2.data(), h1.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("a transformed filter reused gives the oracle's answer, bit for bit the plain call's") {
    context ctx;
    // Problems the plain call runs on the FFT pipeline, as the reused spectrum does.
    for (const problem& p : {problem{2, 64, 64, 100, 90, 8}, problem{1, 5, 9, 70, 63, 33}}) {
        INFO(to_string(p));
        REQUIRE(ctx.plan(p).path != path_kind::direct);
        testing::check_conv(ctx, p, 31, filter_twice);
        check_reuse_same_bits(ctx, p, 1, [&](const filter_spectrum& s) {
            CHECK(s.bytes() == s.geometry().complex_bytes() *
                                   std::size_t(detail::make_layout(p, s.geometry().tile_extent()).filter_spectrum_elements));
            CHECK(s.bytes() >= s.geometry().complex_bytes() * std::size_t(s.geometry().freq_bins()) *
                                   std::size_t(p.in_channels * p.out_channels));
        });
    }
}

TEST_CASE("a transformed filter reused where the plain call takes the direct kernel: the FFT pipeline, the oracle's answer") {
    context ctx;
    const problem p{1, 5, 9, 40, 33, 6};
    REQUIRE(ctx.plan(p).path == path_kind::direct);
    testing::check_conv(ctx, p, 31, filter_twice);
}

TEST_CASE("on the radix-3 depthwise tiles, the filter DFT's own channel-major order is the reused spectrum's, bit for bit") {
    // A fresh filter is transformed straight into the depthwise kernel's
    // order; a reused one is copied into it from the kept half spectrum.
    // Same bits either way, or one of the two orders is wrong.
    for (const int tile : {48, 96}) {
        CAPTURE(tile);
        const problem p{.batch = 3, .in_channels = 6, .out_channels = 6, .height = 40, .width = 37, .kernel = {13, 9},
                        .padding = {6, 4}, .groups = 6};
        context ctx;
        ctx.force_tile_extent(tile);
        REQUIRE(ctx.plan(p).geometry.tile_extent() == tile);
        check_reuse_same_bits(ctx, p, 7, [](const filter_spectrum&) {});
        testing::check_conv(ctx, p, 41);
    }
}

TEST_CASE("a filter spectrum refuses a problem it was not made for") {
    context ctx;
    const problem p{1, 4, 4, 32, 32, 5};
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto x = reference::make_device_array<float>(p.input_elements());
    reference::fill_normal(w.data(), w.size, 3, ctx.stream());
    const filter_spectrum s = ctx.transform_filter(p, w.data());
    const problem other{1, 4, 5, 32, 32, 5};
    auto y = reference::make_device_array<float>(other.output_elements());  // y fits: the spectrum is what is wrong
    CHECK_THROWS_WITH_AS(ctx.conv2d(other, x.data(), s, y.data()),
                         doctest::Contains("the filter spectrum was made for in_channels=4 out_channels=4"),
                         error);
}

TEST_CASE("work runs on the context's stream, and can move to another") {
    testing::stream_holder a, b;
    context ctx(a.s);
    CHECK(ctx.stream() == a.s);
    testing::check_conv(ctx, problem{2, 64, 64, 128, 128, 16}, 5);
    ctx.set_stream(b.s);
    CHECK(ctx.stream() == b.s);
    testing::check_conv(ctx, problem{2, 64, 64, 128, 128, 16}, 6);
}

TEST_CASE("after reserve, calls are captured in a CUDA graph and replay correctly") {
    testing::stream_holder s;
    context ctx(s.s);
    const problem p{2, 128, 128, 120, 130, 16};
    ctx.reserve(p);
    const std::size_t capacity = ctx.engine().workspace_capacity();
    CHECK(capacity >= ctx.workspace_size(p));

    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto y = reference::make_device_array<float>(p.output_elements());
    auto exact = reference::make_device_array<double>(p.output_elements());

    const testing::captured_graph graph(s.s, [&] { ctx.conv2d(p, x.data(), w.data(), y.data()); });

    for (std::uint64_t round = 0; round < 3; ++round) {  // fresh inputs each replay
        reference::fill_normal(x.data(), x.size, 100 + round, s.s);
        reference::fill_normal(w.data(), w.size, 200 + round, s.s);
        reference::fill_nan(y.data(), y.size, s.s);
        graph.launch(s.s);
        reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), s.s);
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(s.s));
        const auto a = reference::compare(reference::to_host(y.data(), y.size),
                                          reference::to_host(exact.data(), exact.size));
        CAPTURE(round);
        CHECK(a.passes());
    }
    CHECK(ctx.engine().workspace_capacity() == capacity);
}

TEST_CASE("under a workspace limit, reserve covers a call through a filter spectrum; transform_filter holds no spectrum") {
    testing::stream_holder s;
    context ctx(s.s);
    // The cuFFT path (a forced extent no fused kernel has), under a limit
    // that fits the whole call through a spectrum but not the call with a
    // filter (whose spectrum the workspace also holds): the two run in
    // passes of different shapes, with cuFFT plans of their own.
    const problem p{4, 32, 32, 96, 96, 9};
    constexpr int tile_extent = 27;
    ctx.force_tile_extent(tile_extent);
    REQUIRE(ctx.plan(p).geometry.tile_extent() == tile_extent);
    const std::size_t through_spectrum = detail::schedule_passes(ctx.engine(), p, tile_extent, false).workspace;
    ctx.set_workspace_limit(through_spectrum);
    const detail::pass_shape whole{p.batch, detail::tile_rows_of(p, tile_extent), p.out_channels};
    REQUIRE(detail::schedule_passes(ctx.engine(), p, tile_extent, false).shape == whole);
    REQUIRE(detail::schedule_passes(ctx.engine(), p, tile_extent, true).shape != whole);

    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto y = reference::make_device_array<float>(p.output_elements());
    auto exact = reference::make_device_array<double>(p.output_elements());
    reference::fill_normal(w.data(), w.size, 71, s.s);
    const filter_spectrum spectrum = ctx.transform_filter(p, w.data());
    ctx.reserve(p);
    CHECK(ctx.engine().workspace_capacity() >= ctx.workspace_size(p));
    CHECK(ctx.workspace_size(p) <= through_spectrum);

    // Captured after reserve: nothing allocates, no plan is made.
    const testing::captured_graph graph(s.s, [&] { ctx.conv2d(p, x.data(), spectrum, y.data()); });
    for (std::uint64_t round = 0; round < 2; ++round) {
        CAPTURE(round);
        reference::fill_input(round ? reference::input_kind::uniform : reference::input_kind::normal, x.data(),
                              x.size, 72 + round, s.s);
        reference::fill_nan(y.data(), y.size, s.s);
        graph.launch(s.s);
        reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), s.s);
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(s.s));
        CHECK(reference::compare(reference::to_host(y.data(), y.size), reference::to_host(exact.data(), exact.size))
                  .passes());
    }

    // transform_filter allocates the spectrum it returns: refused in a capture, by name.
    FFTCONV_CUDA_TRY(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal));
    std::string refusal;
    try {
        (void)ctx.transform_filter(p, w.data());
    } catch (const error& e) {
        CHECK(e.code() == status::invalid_argument);
        refusal = e.what();
    }
    cudaGraph_t empty = nullptr;
    FFTCONV_CUDA_TRY(cudaStreamEndCapture(s.s, &empty));
    (void)cudaGraphDestroy(empty);
    CHECK_MESSAGE(refusal.find("transform_filter allocates the filter spectrum") != std::string::npos, refusal);

    // On a fused extent the transform writes straight into the spectrum: no workspace.
    context fresh;
    const problem dense{2, 128, 128, 120, 130, 16};
    REQUIRE(has_fused_fft(fresh.plan(dense).geometry.tile_extent()));
    auto wd = reference::make_device_array<float>(dense.filter_elements());
    reference::fill_normal(wd.data(), wd.size, 73, fresh.stream());
    const filter_spectrum made = fresh.transform_filter(dense, wd.data());
    CHECK(fresh.engine().workspace_capacity() == 0);
}

namespace {

// One repeated call of `p` on fixed pointers, fresh inputs each round (normal,
// then positive), `run` enqueuing it on ctx: every round against the
// float64 oracle, and bit for bit against the same call on a context that
// replays nothing (under the same workspace limit: the same passes).
// `between(round)` runs after each round.
template <class Run, class Between>
void check_repeated(context& ctx, const problem& p, Run&& run, Between&& between) {
    context eager;
    eager.replay_repeated_calls(false);
    eager.set_workspace_limit(ctx.workspace_limit());
    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto bias = reference::make_device_array<float>(p.out_channels);
    auto y = reference::make_device_array<float>(p.output_elements());
    auto y_eager = reference::make_device_array<float>(p.output_elements());
    auto exact = reference::make_device_array<double>(p.output_elements());
    for (int round = 0; round < 6; ++round) {
        CAPTURE(round);
        const auto kind = round % 2 ? reference::input_kind::uniform : reference::input_kind::normal;
        reference::fill_input(kind, x.data(), x.size, 300 + round, ctx.stream());
        reference::fill_input(kind, w.data(), w.size, 400 + round, ctx.stream());
        reference::fill_normal(bias.data(), bias.size, 500 + round, ctx.stream());
        reference::fill_nan(y.data(), y.size, ctx.stream());
        run(ctx, x.data(), w.data(), bias.data(), y.data());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
        eager.conv2d(p, x.data(), w.data(), bias.data(), y_eager.data());
        reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), eager.stream(), bias.data());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(eager.stream()));
        const auto got = reference::to_host(y.data(), y.size);
        const auto expected = reference::to_host(y_eager.data(), y_eager.size);
        CHECK(reference::compare(got, reference::to_host(exact.data(), exact.size)).passes());
        CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
        between(round);
    }
}

}  // namespace

TEST_CASE("repeated calls replay as CUDA graphs: the eager call's bits, on fresh inputs, through resource changes") {
    // The fused dense pipeline with its side stream, the cuFFT path, and the
    // fused depthwise kernel; on the legacy default stream (captured on a
    // private one) and on a stream of the caller's.
    const problem depthwise{.batch = 4, .in_channels = 16, .out_channels = 16, .height = 56, .width = 56,
                            .kernel = 31, .padding = 15, .groups = 16};
    testing::stream_holder own;
    for (const problem& p : {problem{2, 64, 64, 100, 90, 8}, problem{1, 5, 9, 70, 63, 33}, depthwise}) {
        for (const cudaStream_t stream : {cudaStream_t{}, own.s}) {
            CAPTURE(to_string(p));
            context ctx(stream);
            REQUIRE(ctx.plan(p).path != path_kind::direct);
            const problem larger{2, 32, 32, 300, 300, 9};  // grows the workspace: every graph dropped
            auto big = testing::make_conv_tensors(larger, 9, reference::input_kind::normal, stream);
            const auto plain = [&](context& c, const float* x, const float* w, const float* b, float* y) {
                c.conv2d(p, x, w, b, y);
            };
            // Rounds 0 eager (growing the workspace: no graph held yet), 1 captured, 2 replayed;
            // the growth drops the graph; 3 captured again, 4 and 5 replayed.
            check_repeated(ctx, p, plain, [&](int round) {
                if (round == 2) ctx.conv2d(larger, big.x.data(), big.w.data(), big.y.data());
            });
            INFO("the latest dropped capture: ", ctx.call_graphs().last_dropped_capture());
            CHECK(ctx.call_graphs().replays() == 3);
            CHECK(ctx.call_graphs().graphs() == 1);
            // A new workspace limit is another call (its passes may differ).
            ctx.set_workspace_limit(ctx.workspace_size(p) / 2);
            check_repeated(ctx, p, plain, [](int) {});
            CHECK(ctx.call_graphs().replays() == 3 + 4);
            ctx.release();
            CHECK(ctx.call_graphs().graphs() == 0);
        }
    }
}

TEST_CASE("a repeated call through a filter spectrum replays; with replay off none does") {
    const problem p{2, 64, 64, 100, 90, 8};
    for (const bool replay : {true, false}) {
        CAPTURE(replay);
        context ctx, eager;
        ctx.replay_repeated_calls(replay);
        eager.replay_repeated_calls(false);
        auto t = testing::make_conv_tensors(p, 21);
        auto y_eager = reference::make_device_array<float>(p.output_elements());
        const filter_spectrum spectrum = ctx.transform_filter(p, t.w.data());
        for (int round = 0; round < 4; ++round) {
            CAPTURE(round);
            reference::fill_normal(t.x.data(), t.x.size, 600 + round, ctx.stream());
            ctx.conv2d(p, t.x.data(), spectrum, t.y.data());
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
            eager.conv2d(p, t.x.data(), t.w.data(), y_eager.data());  // the same bits (the test above)
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(eager.stream()));
            const auto got = reference::to_host(t.y.data(), t.y.size);
            const auto expected = reference::to_host(y_eager.data(), y_eager.size);
            CHECK(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)) == 0);
        }
        CHECK(ctx.call_graphs().replays() == (replay ? 2u : 0u));
        CHECK(ctx.call_graphs().graphs() == (replay ? 1u : 0u));
    }
}

TEST_CASE("the workspace grows to the largest problem and then stays") {
    context ctx;
    const problem small{1, 8, 8, 40, 40, 5};
    const problem large{2, 32, 32, 200, 180, 9};
    testing::check_conv(ctx, small, 1);
    testing::check_conv(ctx, large, 2);
    const std::size_t capacity = ctx.engine().workspace_capacity();
    CHECK(capacity >= ctx.workspace_size(large));
    CHECK(capacity >= ctx.workspace_size(small));
    testing::check_conv(ctx, small, 3);
    testing::check_conv(ctx, large, 4);
    CHECK(ctx.engine().workspace_capacity() == capacity);
}

TEST_CASE("bad input throws invalid_argument naming the problem, and leaves y untouched") {
    context ctx;
    const problem good{1, 3, 3, 16, 16, 3};
    auto x = reference::make_device_array<float>(good.input_elements());
    auto w = reference::make_device_array<float>(good.filter_elements());
    auto y = reference::make_device_array<float>(good.output_elements());
    reference::fill_normal(x.data(), x.size, 1, ctx.stream());
    reference::fill_normal(w.data(), w.size, 2, ctx.stream());
    FFTCONV_CUDA_TRY(cudaMemsetAsync(y.data(), 0x7f, sizeof(float) * std::size_t(y.size), ctx.stream()));
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
    const auto before = reference::to_host(y.data(), y.size);

    auto expect_invalid = [&](auto&& call, const std::string& message) {
        try {
            call();
            FAIL("accepted: " << message);
        } catch (const error& e) {
            CHECK(e.code() == status::invalid_argument);
            CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
        }
    };
    expect_invalid([&] { ctx.conv2d(problem{1, 3, 3, 16, 16, 17}, x.data(), w.data(), y.data()); },
                   "problem.kernel.height = 17 exceeds the padded height 16");
    expect_invalid([&] { ctx.conv2d(problem{0, 3, 3, 16, 16, 3}, x.data(), w.data(), y.data()); },
                   "problem.batch = 0");
    expect_invalid([&] { ctx.conv2d(good, static_cast<const float*>(nullptr), w.data(), y.data()); }, "x is a null pointer");
    expect_invalid([&] { ctx.conv2d(good, x.data(), nullptr, y.data()); }, "w is a null pointer");
    expect_invalid([&] { ctx.force_tile_extent(-3); }, "force_tile_extent(-3)");
    ctx.force_tile_extent(2);
    expect_invalid([&] { ctx.conv2d(good, x.data(), w.data(), y.data()); }, "forced tile extent 2");
    ctx.force_tile_extent(0);

    FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
    const auto after = reference::to_host(y.data(), y.size);
    CHECK(std::memcmp(before.data(), after.data(), before.size() * sizeof(float)) == 0);
}

TEST_CASE("a forced tile extent runs the generic path and stays correct") {
    context ctx;
    const problem p{2, 64, 64, 128, 128, 8};
    for (int t : {8, 15, 16, 27, 32, 48, 64, 128, 135}) {
        ctx.force_tile_extent(t);
        REQUIRE(ctx.plan(p).path == path_kind::generic);
        REQUIRE(ctx.plan(p).geometry.tile_extent() == t);
        testing::check_conv(ctx, p, std::uint64_t(t));
    }
}

namespace {
constexpr tile_config user_config{5, 6, 16};  // a configuration the library was not built with
}

TEST_CASE("user code compiles and runs its own configuration") {
    context ctx;
    const problem p{2, 6, 6, 50, 41, 5};
    testing::check_conv(ctx, p, 9, [](context& c, const problem& q, const float* x, const float* w,
                                      float* y) { conv2d<user_config>(c, q, x, w, y); });
    auto buffer = reference::make_device_array<float>(1 << 16);
    CHECK_THROWS_WITH_AS(conv2d<user_config>(ctx, problem{1, 6, 7, 50, 41, 5}, buffer.data(),
                                             buffer.data(), buffer.data()),
                         doctest::Contains("does not fit the configuration kernel_extent=5 channels=6"),
                         error);
}
