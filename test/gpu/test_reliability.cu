// Reliability: every valid problem computes (wide, tall, huge), problems
// larger than the workspace limit run in passes with the same result,
// non-finite inputs stay in their sample, streams and graphs are safe, bad
// pointers and foreign errors are named before anything runs, and resources
// stay bounded. docs/reliability.md lists what each case proves.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "conv_check.hpp"
#include "direct/narrow_depthwise.hpp"
#include "fftconv/detail/runtime/engine.hpp"

using namespace fftconv;

namespace {


std::size_t free_device_bytes() {
    std::size_t free_bytes = 0, total = 0;
    FFTCONV_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
    return free_bytes;
}

bool same_bits(const float* a, const float* b, std::int64_t n) {
    const auto ha = reference::to_host(a, n);
    const auto hb = reference::to_host(b, n);
    return std::memcmp(ha.data(), hb.data(), sizeof(float) * ha.size()) == 0;
}

template <class F>
void expect_error(F&& call, status code, const std::string& message) {
    try {
        call();
        FAIL("accepted, expected: " << message);
    } catch (const error& e) {
        CHECK(e.code() == code);
        CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
}

}  // namespace

TEST_CASE("the valid problems that used to crash or be refused compute the right answer") {
    context ctx;
    for (const problem& p : {problem{1, 1, 1, 512, 46729, 512}, problem{1, 1, 1, 1, 65536, 1},
                             problem{4, 16, 16, 8, 131072, 8}, problem{1, 1, 1, 128, 70000, 9}}) {
        const auto a = testing::check_conv(ctx, p, 8);
        std::printf("%s: tile %d, rel_l2=%.3g worst=%.3f\n", to_string(p).c_str(),
                    ctx.plan(p).geometry.tile_extent(), a.relative_l2, a.worst_fraction);
    }
}

TEST_CASE("wide, tall and huge extents (46341 ... 2^20, K up to 1024), checked on sampled outputs") {
    context ctx;
    for (const problem& p : {problem{1, 1, 1, 3, 46341, 3}, problem{1, 1, 1, 46341, 3, 3},
                             problem{1, 2, 3, 1 << 20, 4, 2}, problem{1, 1, 1, 2, 1 << 20, 2},
                             problem{2, 3, 2, 600, 1 << 17, 17}, problem{1, 1, 1, 1100, 50000, 1024},
                             problem{1, 1, 1, 46341, 46341, 1}}) {
        const auto a = testing::check_conv(ctx, p, 9, testing::plain_conv, 4096);
        std::printf("%s: tile %d, rel_l2=%.3g worst=%.3f (4096 sampled outputs)\n", to_string(p).c_str(),
                    ctx.plan(p).geometry.tile_extent(), a.relative_l2, a.worst_fraction);
    }
}

namespace {

// Runs `p` with and without a workspace limit on the same inputs: the limited
// run must fit its limit and give bit-identical output.
void check_passes(const problem& p, std::size_t limit, int forced_tile, std::int64_t sample) {
    CAPTURE(to_string(p));
    CAPTURE(limit);
    CAPTURE(forced_tile);
    context whole, limited;
    whole.force_tile_extent(forced_tile);
    limited.force_tile_extent(forced_tile);
    limited.set_workspace_limit(limit);
    const std::size_t bytes = limited.workspace_size(p);
    CHECK(bytes <= limit);
    CHECK(whole.workspace_size(p) > limit);  // it really needs passes
    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto y_whole = reference::make_device_array<float>(p.output_elements());
    auto y_passes = reference::make_device_array<float>(p.output_elements());
    reference::fill_uniform(x.data(), x.size, 51, nullptr);
    reference::fill_normal(w.data(), w.size, 52, nullptr);
    reference::fill_nan(y_passes.data(), y_passes.size, nullptr);
    whole.conv2d(p, x.data(), w.data(), y_whole.data());
    limited.conv2d(p, x.data(), w.data(), y_passes.data());
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    CHECK(limited.engine().workspace_capacity() <= limit);
    CHECK(same_bits(y_whole.data(), y_passes.data(), p.output_elements()));
    // And right: against the oracle (all outputs, or a sample of a large one).
    testing::check_conv(limited, p, 53, testing::plain_conv, sample);
}

}  // namespace

TEST_CASE("under a workspace limit a problem runs in passes, bit for bit the unlimited result") {
    // Passes over samples, bands of tile rows and output channels, fused and cuFFT tiles.
    for (int forced : {0, 24}) {
        const problem p{5, 6, 10, 70, 50, 7};
        context probe;
        probe.force_tile_extent(forced);
        const std::size_t whole = probe.workspace_size(p);
        // Passes over samples, bands of tile rows, output channels (in that order as the limit shrinks).
        for (std::size_t divisor : {2, 4, 8, 16}) check_passes(p, whole / divisor, forced, 0);
    }
    // The issue's example: 64 x 128 x 512^2, K = 32, under 2 GiB (the whole needs ~62 GB).
    check_passes(problem{64, 128, 128, 512, 512, 32}, std::size_t{2} << 30, 0, 8192);
}

TEST_CASE("a filter spectrum used over passes of output channels: each pass multiplies a range of the wider filter") {
    // One row of 42 tiles (T = 32), 64 -> 128 channels: the tensor-core GEMM
    // runs (>= 32 rows, >= 16 input channels), and under 25 MiB the 128
    // output channels need passes (the input spectrum is 11.7 MB, each
    // output channel 0.18 MB) while the filter spectrum keeps all 128.
    const problem p{1, 64, 128, 32, 1000, 9};
    context ctx;
    ctx.force_tile_extent(32);
    ctx.set_workspace_limit(std::size_t{25} << 20);
    testing::check_conv(ctx, p, 61, [](context& cx, const problem& q, const float* x, const float* w, float* y) {
        const filter_spectrum spectrum = cx.transform_filter(q, w);
        cx.conv2d(q, x, spectrum, y);
    });
}

TEST_CASE("a limit below the smallest pass is out_of_memory with the byte counts, and writes nothing") {
    context ctx;
    const problem p{2, 8, 8, 80, 80, 33};  // wider than the direct kernels take: the FFT pipeline's workspace
    REQUIRE(ctx.plan(p).path != path_kind::direct);
    ctx.set_workspace_limit(1000);
    auto [x, w, y] = testing::make_conv_tensors(p, 1);
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    const auto before = reference::to_host(y.data(), y.size);
    expect_error([&] { ctx.conv2d(p, x.data(), w.data(), y.data()); }, status::out_of_memory,
                 "bytes are usable");
    const auto after = reference::to_host(y.data(), y.size);
    CHECK(std::memcmp(before.data(), after.data(), sizeof(float) * before.size()) == 0);
    ctx.set_workspace_limit(SIZE_MAX);
    testing::check_conv(ctx, p, 3);  // and the context still works
}

namespace {

// Whether output (i, j) lies in a tile whose T x T input window holds
// (row, col), or in the tile paired with such a tile in the fused
// transforms (tiles 2k and 2k + 1 of an image, row-major).
bool in_reached_tile(std::int64_t i, std::int64_t j, int tile, int out_tile, std::int64_t tiles_wide,
                     std::int64_t row, std::int64_t col) {
    auto holds = [&](std::int64_t t) {
        const std::int64_t r0 = t / tiles_wide * out_tile, c0 = t % tiles_wide * out_tile;
        return row >= r0 && row < r0 + tile && col >= c0 && col < c0 + tile;
    };
    const std::int64_t t = i / out_tile * tiles_wide + j / out_tile;
    return holds(t) || holds(t ^ 1);
}

}  // namespace

// Two channel counts: 4 (cuBLAS's FFMA GEMM) and 48 in 8 samples (the
// split-TF32 tensor-core GEMM, which once rounded the GPU's NaN to -0).
TEST_CASE("a NaN or Inf in x stays in its sample and in the tiles that read it") {
    for (const problem& p : {problem{2, 4, 4, 40, 40, 5}, problem{8, 48, 48, 40, 40, 5}}) {
        CAPTURE(to_string(p));
        const std::int64_t ho = p.out_height(), wo = p.out_width();
        for (int forced : {0, 16, 32, 24}) {          // the heuristic's tile, fused tiles, cuFFT tiles
            for (float bad : {NAN, INFINITY, -INFINITY}) {
                context ctx;
                ctx.force_tile_extent(forced);
                const int tile = ctx.plan(p).geometry.tile_extent();
                const int out_tile = tile - int(p.kernel.height) + 1;
                const std::int64_t tiles_wide = (wo + out_tile - 1) / out_tile;
                CAPTURE(tile);
                CAPTURE(bad);
                auto x = reference::make_device_array<float>(p.input_elements());
                auto w = reference::make_device_array<float>(p.filter_elements());
                auto y = reference::make_device_array<float>(p.output_elements());
                auto exact = reference::make_device_array<double>(p.output_elements());
                reference::fill_normal(x.data(), x.size, 61, nullptr);
                reference::fill_normal(w.data(), w.size, 62, nullptr);
                const std::int64_t row = 39, col = 39;  // x[0, 0, 39, 39]
                FFTCONV_CUDA_TRY(
                    cudaMemcpy(x.data() + row * p.width + col, &bad, sizeof(float), cudaMemcpyHostToDevice));
                ctx.conv2d(p, x.data(), w.data(), y.data());
                reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), nullptr);
                FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
                const auto got = reference::to_host(y.data(), y.size);
                const auto want = reference::to_host(exact.data(), exact.size);
                std::int64_t outside_bad = 0, other_sample_bad = 0, reached_finite = 0, wrong = 0;
                for (std::int64_t b = 0; b < p.batch; ++b)
                    for (std::int64_t o = 0; o < p.out_channels; ++o)
                        for (std::int64_t i = 0; i < ho; ++i)
                            for (std::int64_t j = 0; j < wo; ++j) {
                                const std::size_t k = std::size_t(((b * p.out_channels + o) * ho + i) * wo + j);
                                const bool finite = std::isfinite(got[k]);
                                const bool reached =
                                    b == 0 && in_reached_tile(i, j, tile, out_tile, tiles_wide, row, col);
                                // Outputs whose direct sum reads x[0, 0, 39, 39] are not finite either way.
                                const bool direct = b == 0 && i <= row && row < i + p.kernel.height && j <= col &&
                                                    col < j + p.kernel.height;
                                if (b != 0 && !finite) ++other_sample_bad;
                                if (!reached && !finite) ++outside_bad;
                                if (direct && finite) ++reached_finite;
                                if (finite && !reached &&
                                    std::abs(got[k] - want[k]) > 1e-3 + 1e-3 * std::abs(want[k]))
                                    ++wrong;
                            }
                CHECK(other_sample_bad == 0);
                CHECK(outside_bad == 0);
                CHECK(reached_finite == 0);
                CHECK(wrong == 0);
            }
        }
    }
}

namespace {

// Where a non-finite input went, output by output against the float64
// result: non-finite outputs where `may_be_bad(k)` says none may be
// (escaped), outputs the exact result makes non-finite that came out finite
// (reached_finite), and finite outputs outside 1e-3 + 1e-3 |exact| (wrong).
struct spread {
    std::int64_t escaped = 0, reached_finite = 0, wrong = 0;
};

template <class MayBeBad>
spread spread_of(const std::vector<float>& got, const std::vector<double>& want, MayBeBad may_be_bad) {
    spread s;
    for (std::size_t k = 0; k < got.size(); ++k) {
        const bool finite = std::isfinite(got[k]), exact_finite = std::isfinite(want[k]);
        if (!finite && !may_be_bad(std::int64_t(k))) ++s.escaped;
        if (!exact_finite && finite) ++s.reached_finite;
        if (finite && exact_finite && std::abs(got[k] - want[k]) > 1e-3 + 1e-3 * std::abs(want[k])) ++s.wrong;
    }
    return s;
}

}  // namespace

TEST_CASE("depthwise: a NaN or Inf in x stays in its own channel and sample, also where tile pairs span samples") {
    // One 14 x 14 output tile per image at T = 32, 48, 64 and 96: the fused
    // depthwise kernel pairs sample b with sample b + 1 of the same channel.
    // The dispatch's own choice is the direct path (src/direct/direct_depthwise.cu).
    const problem p{.batch = 4, .in_channels = 4, .out_channels = 4, .height = 14, .width = 14, .kernel = 13,
                    .padding = 6, .groups = 4};
    const std::int64_t plane = p.out_height() * p.out_width();
    const std::int64_t bad_b = 1, bad_c = 2, row = 7, col = 3;
    for (int forced : {0, 16, 32, 48, 64, 96, 30}) {  // the dispatch's choice, fused tiles, cuFFT tiles
        for (float bad : {NAN, INFINITY}) {
            context ctx;
            ctx.force_tile_extent(forced);
            CAPTURE(forced);
            CAPTURE(bad);
            CHECK((ctx.plan(p).path == path_kind::direct) == (forced == 0));
            auto [x, w, y] = testing::make_conv_tensors(p, 81);
            auto exact = reference::make_device_array<double>(p.output_elements());
            FFTCONV_CUDA_TRY(cudaMemcpy(x.data() + ((bad_b * p.in_channels + bad_c) * p.height + row) * p.width + col,
                                        &bad, sizeof(float), cudaMemcpyHostToDevice));
            ctx.conv2d(p, x.data(), w.data(), y.data());
            reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), nullptr);
            FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
            const auto got = reference::to_host(y.data(), y.size);
            const auto want = reference::to_host(exact.data(), exact.size);
            const spread s = spread_of(got, want, [&](std::int64_t k) {
                return k / plane == bad_b * p.out_channels + bad_c;  // the bad plane
            });
            CHECK(s.escaped == 0);
            CHECK(s.reached_finite == 0);
            CHECK(s.wrong == 0);
        }
    }
}

TEST_CASE("the narrow direct kernel: a NaN or Inf in x stays in its own plane, in the rows that see its row") {
    // Run on the narrow kernel directly (its model gives a problem this small
    // to the planes kernel). It multiplies every input column of a row with
    // every output column, padding taps included, so the value may reach
    // more columns of those rows than the definition's window; never
    // another plane, never a row whose window misses its row.
    const problem p{.batch = 3, .in_channels = 4, .out_channels = 4, .height = 14, .width = 10, .kernel = 9,
                    .padding = 4, .groups = 4};
    REQUIRE(detail::fits_narrow_depthwise(p));
    const std::int64_t bad_b = 1, bad_c = 2, row = 7, col = 3;
    const std::int64_t plane = p.out_height() * p.out_width();
    for (float bad : {NAN, INFINITY}) {
        CAPTURE(bad);
        context ctx;
        auto [x, w, y] = testing::make_conv_tensors(p, 91);
        auto exact = reference::make_device_array<double>(p.output_elements());
        FFTCONV_CUDA_TRY(cudaMemcpy(x.data() + ((bad_b * p.in_channels + bad_c) * p.height + row) * p.width + col, &bad,
                                    sizeof(float), cudaMemcpyHostToDevice));
        detail::narrow_depthwise(ctx.engine(), p, x.data(), w.data(), nullptr, y.data());
        reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
        const auto got = reference::to_host(y.data(), y.size);
        const auto want = reference::to_host(exact.data(), exact.size);
        const spread s = spread_of(got, want, [&](std::int64_t k) {
            const std::int64_t i = k % plane / p.out_width();  // the output row
            const bool bad_plane = k / plane == bad_b * p.out_channels + bad_c;
            return bad_plane && i - p.padding.height <= row && row < i - p.padding.height + p.kernel.height;
        });
        CHECK(s.escaped == 0);
        CHECK(s.reached_finite == 0);
        CHECK(s.wrong == 0);
    }
}

TEST_CASE("a NaN in the filter of one output channel reaches that channel and at most its pair partner") {
    const problem p{2, 3, 5, 33, 33, 4};
    for (int forced : {0, 24}) {
        context ctx;
        ctx.force_tile_extent(forced);
        auto [x, w, y] = testing::make_conv_tensors(p, 71);
        const float bad = NAN;
        const std::int64_t channel = 2;  // w[2, 1, 3, 0]
        FFTCONV_CUDA_TRY(cudaMemcpy(w.data() + ((channel * p.in_channels + 1) * 4 + 3) * 4, &bad, sizeof(float),
                                    cudaMemcpyHostToDevice));
        ctx.conv2d(p, x.data(), w.data(), y.data());
        const auto got = reference::to_host(y.data(), y.size);
        const std::int64_t plane = p.out_height() * p.out_width();
        // Filter tiles n = in_channel * out_channels + out_channel are paired
        // (n, n ^ 1) in the fused transforms: the partner's output channel.
        const std::int64_t n = 1 * p.out_channels + channel;
        const std::int64_t partner = forced == 24 ? channel : (n ^ 1) % p.out_channels;
        for (std::int64_t b = 0; b < p.batch; ++b)
            for (std::int64_t o = 0; o < p.out_channels; ++o) {
                std::int64_t non_finite = 0;
                for (std::int64_t k = 0; k < plane; ++k)
                    non_finite += !std::isfinite(got[std::size_t((b * p.out_channels + o) * plane + k)]);
                CAPTURE(o);
                if (o == channel) CHECK(non_finite == plane);
                else if (o != partner) CHECK(non_finite == 0);
            }
    }
}

TEST_CASE("set_stream with work in flight: every call identical to a serial run, no sync between") {
    const problem p{8, 128, 128, 512, 512, 16};
    constexpr int calls = 10;
    testing::stream_holder a, b;
    std::vector<reference::device_array<float>> xs, ys, serial;
    auto w = reference::make_device_array<float>(p.filter_elements());
    reference::fill_normal(w.data(), w.size, 80, nullptr);
    for (int i = 0; i < calls; ++i) {
        xs.push_back(reference::make_device_array<float>(p.input_elements()));
        ys.push_back(reference::make_device_array<float>(p.output_elements()));
        serial.push_back(reference::make_device_array<float>(p.output_elements()));
        reference::fill_normal(xs.back().data(), p.input_elements(), 81 + std::uint64_t(i), nullptr);
    }
    {
        context ctx;
        for (int i = 0; i < calls; ++i) {
            ctx.conv2d(p, xs[i].data(), w.data(), serial[i].data());
            FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
        }
    }
    context ctx(a.s);
    ctx.reserve(p);
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    for (int i = 0; i < calls; ++i) {
        ctx.set_stream(i % 2 == 0 ? a.s : b.s);
        ctx.conv2d(p, xs[i].data(), w.data(), ys[i].data());
    }
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    for (int i = 0; i < calls; ++i) {
        CAPTURE(i);
        CHECK(same_bits(ys[i].data(), serial[i].data(), p.output_elements()));
    }
}

TEST_CASE("a captured graph stays valid after later calls grow the workspace") {
    testing::stream_holder s;
    context ctx(s.s);
    const problem small{2, 16, 16, 60, 70, 9};
    const problem large{2, 64, 64, 300, 300, 16};
    ctx.reserve(small);
    auto x = reference::make_device_array<float>(small.input_elements());
    auto w = reference::make_device_array<float>(small.filter_elements());
    auto y = reference::make_device_array<float>(small.output_elements());
    auto exact = reference::make_device_array<double>(small.output_elements());
    const testing::captured_graph graph(s.s, [&] { ctx.conv2d(small, x.data(), w.data(), y.data()); });

    const std::size_t before = ctx.engine().workspace_capacity();
    testing::check_conv(ctx, large, 90);  // grows the workspace
    CHECK(ctx.engine().workspace_capacity() > before);

    reference::fill_uniform(x.data(), x.size, 91, s.s);
    reference::fill_normal(w.data(), w.size, 92, s.s);
    reference::fill_nan(y.data(), y.size, s.s);
    graph.launch(s.s);
    reference::direct_conv_gpu(small, x.data(), w.data(), exact.data(), s.s);
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(s.s));
    testing::check_bar(reference::compare(reference::to_host(y.data(), y.size),
                                          reference::to_host(exact.data(), exact.size)));
}

TEST_CASE("a call that would allocate during capture is refused, and allocates nothing") {
    testing::stream_holder s;
    context ctx(s.s);
    const problem p{1, 8, 8, 60, 60, 33};  // wider than the direct kernels take: the FFT pipeline
    REQUIRE(ctx.plan(p).path != path_kind::direct);
    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto y = reference::make_device_array<float>(p.output_elements());
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    const std::size_t free_before = free_device_bytes();
    for (int forced : {0, 40}) {  // workspace growth; a cuFFT plan not made yet
        ctx.force_tile_extent(forced);
        cudaGraph_t graph = nullptr;
        FFTCONV_CUDA_TRY(cudaStreamBeginCapture(s.s, cudaStreamCaptureModeGlobal));
        expect_error([&] { ctx.conv2d(p, x.data(), w.data(), y.data()); }, status::invalid_argument,
                     "call reserve(problem)");
        CHECK(cudaStreamEndCapture(s.s, &graph) == cudaSuccess);
        if (graph != nullptr) (void)cudaGraphDestroy(graph);
    }
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(free_device_bytes() == free_before);
    ctx.force_tile_extent(0);
    testing::check_conv(ctx, p, 93);
}

TEST_CASE("a direct-kernel call needs no workspace: captured without reserve, the graph gives the oracle's answer") {
    testing::stream_holder s;
    context ctx(s.s);
    const problem p{2, 8, 8, 20, 20, 3};
    REQUIRE(ctx.plan(p).path == path_kind::direct);
    testing::check_conv(ctx, p, 95, [](context& c, const problem& q, const float* x, const float* w, float* y) {
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        FFTCONV_CUDA_TRY(cudaStreamBeginCapture(c.stream(), cudaStreamCaptureModeGlobal));
        try {
            c.conv2d(q, x, w, y);
        } catch (...) {
            (void)cudaStreamEndCapture(c.stream(), &graph);
            if (graph != nullptr) (void)cudaGraphDestroy(graph);
            throw;
        }
        FFTCONV_CUDA_TRY(cudaStreamEndCapture(c.stream(), &graph));
        FFTCONV_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
        FFTCONV_CUDA_TRY(cudaGraphLaunch(exec, c.stream()));
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(c.stream()));
        FFTCONV_CUDA_TRY(cudaGraphExecDestroy(exec));
        FFTCONV_CUDA_TRY(cudaGraphDestroy(graph));
    });
}

TEST_CASE("host, page-locked and too small buffers are named before anything runs") {
    context ctx;
    const problem p{1, 3, 3, 20, 20, 3};
    auto [x, w, y] = testing::make_conv_tensors(p, 1);
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    const auto before = reference::to_host(y.data(), y.size);

    std::vector<float> host(std::size_t(p.input_elements()));
    float* pinned = nullptr;
    FFTCONV_CUDA_TRY(cudaMallocHost(&pinned, sizeof(float) * std::size_t(p.output_elements())));
    expect_error([&] { ctx.conv2d(p, host.data(), w.data(), y.data()); }, status::invalid_argument,
                 "is host memory");
    expect_error([&] { ctx.conv2d(p, x.data(), w.data(), pinned); }, status::invalid_argument,
                 "is page-locked host memory");
    expect_error([&] { ctx.conv2d(p, x.data(), host.data(), y.data()); }, status::invalid_argument, "w = ");
    // A small buffer at the end of its own allocation (cudaMalloc of >= 2 MiB
    // is mapped on its own), so the bytes past it are unmapped.
    auto big = reference::make_device_array<float>(std::int64_t{1} << 22);
    const float* tail = big.data() + (std::int64_t{1} << 22) - p.input_elements() / 2;
    expect_error([&] { ctx.conv2d(p, tail, w.data(), y.data()); }, status::invalid_argument, "is too small");
    (void)cudaFreeHost(pinned);

    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());  // no sticky fault
    const auto after = reference::to_host(y.data(), y.size);
    CHECK(std::memcmp(before.data(), after.data(), sizeof(float) * before.size()) == 0);
    testing::check_conv(ctx, p, 4);
}

TEST_CASE("a context used while another device is current says so") {
    int devices = 0;
    FFTCONV_CUDA_TRY(cudaGetDeviceCount(&devices));
    if (devices < 2) {
        MESSAGE("one CUDA device: the other-device case needs two (not run)");
        return;
    }
    FFTCONV_CUDA_TRY(cudaSetDevice(0));
    context ctx;
    const problem p{1, 2, 2, 16, 16, 3};
    auto x = reference::make_device_array<float>(p.input_elements());
    FFTCONV_CUDA_TRY(cudaSetDevice(1));
    expect_error([&] { ctx.conv2d(p, x.data(), x.data(), x.data()); }, status::invalid_argument,
                 "this context belongs to CUDA device 0, but device 1 is current");
    FFTCONV_CUDA_TRY(cudaSetDevice(0));
}

TEST_CASE("a CUDA error pending from the caller's work is named, not claimed, and left in place") {
    context ctx;
    const problem p{1, 2, 2, 16, 16, 3};
    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto y = reference::make_device_array<float>(p.output_elements());
    void* impossible = nullptr;
    REQUIRE(cudaMalloc(&impossible, std::size_t{1} << 62) == cudaErrorMemoryAllocation);
    expect_error([&] { ctx.conv2d(p, x.data(), w.data(), y.data()); }, status::cuda_error,
                 "pending: cudaErrorMemoryAllocation");
    CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);  // still the caller's to read
    testing::check_conv(ctx, p, 5);
}

TEST_CASE("2000 distinct shapes on one context: the plan cache stays bounded, release() returns the memory") {
    context ctx;
    auto x = reference::make_device_array<float>(4 * 5 * 50 * 50);
    auto w = reference::make_device_array<float>(5 * 5 * 9 * 9);
    auto y = reference::make_device_array<float>(4 * 5 * 50 * 50);
    reference::fill_normal(x.data(), x.size, 1, nullptr);
    reference::fill_normal(w.data(), w.size, 2, nullptr);
    const int tiles[] = {0, 16, 24, 32, 40, 48};
    // Shape i of round r: distinct for every (i, r).
    auto run_round = [&](int round) {
        for (int i = 0; i < 1000; ++i) {
            const int k = 1 + i % 9;
            const problem p{1 + (i / 9) % 4, 1 + (i / 36) % 5, 1 + (i / 180) % 5, 16 + i % 17 + 17 * round,
                            16 + (i * 7) % 29, k};
            ctx.force_tile_extent(tiles[i % 6] >= k ? tiles[i % 6] : 0);
            ctx.conv2d(p, x.data(), w.data(), y.data());
            CHECK(ctx.engine().cached_transforms() <= detail::engine::transform_cache_capacity);
        }
        FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
        ctx.release();
        CHECK(ctx.engine().cached_transforms() == 0);
        CHECK(ctx.engine().workspace_capacity() == 0);
    };
    // Kernels load lazily, and a load takes device memory for good: a first
    // pass over both rounds loads every kernel they use (the routes of round
    // 1's larger images differ from round 0's), then both rounds again must
    // give back every byte.
    run_round(0);
    run_round(1);
    const std::size_t baseline = free_device_bytes();
    run_round(0);
    run_round(1);
    const std::size_t after = free_device_bytes();
    std::printf("2000 shapes: free device memory after release %zu, baseline %zu\n", after, baseline);
    CHECK(after == baseline);
    ctx.force_tile_extent(0);
    testing::check_conv(ctx, problem{2, 5, 5, 48, 48, 9}, 6);  // usable after release
}

TEST_CASE("a plan lookup that evicts the plan a call just made leaves the call's sizes and result right") {
    // Plans used in captured graphs stay pinned; with all but one of the
    // cache's places pinned, a call's second plan lookup evicts its first.
    context ctx;
    testing::stream_holder stream;
    ctx.set_stream(stream.s);
    ctx.force_tile_extent(24);  // cuFFT's transforms: plans per problem
    auto x = reference::make_device_array<float>(8 * 3 * 40 * 40);
    auto w = reference::make_device_array<float>(3 * 3 * 9 * 9);
    auto y = reference::make_device_array<float>(8 * 3 * 40 * 40);
    reference::fill_normal(x.data(), x.size, 1, stream.s);
    reference::fill_normal(w.data(), w.size, 2, stream.s);
    for (std::int64_t height = 16; ctx.engine().cached_transforms() < detail::engine::transform_cache_capacity - 1; ++height) {
        const problem p{1, 3, 3, height, 16, 9};
        ctx.reserve(p);
        const testing::captured_graph graph(stream.s, [&] { ctx.conv2d(p, x.data(), w.data(), y.data()); });
    }
    const problem fresh{8, 3, 3, 40, 40, 9};
    CHECK(ctx.workspace_size(fresh) > 0);
    testing::check_conv(ctx, fresh, 61);
}

TEST_CASE("workspace_size after a capture ended: no stale capture state, the device checked") {
    context ctx;
    testing::stream_holder stream;
    ctx.set_stream(stream.s);
    const problem small{1, 2, 2, 24, 24, 5}, large{4, 8, 8, 96, 96, 9};
    auto [x, w, y] = testing::make_conv_tensors(small, 3, reference::input_kind::normal, stream.s);
    ctx.reserve(small);
    { const testing::captured_graph graph(stream.s, [&] { ctx.conv2d(small, x.data(), w.data(), y.data()); }); }
    // The last call was captured; this one is not, and needs more workspace.
    CHECK(ctx.workspace_size(large) >= ctx.workspace_size(small));
    ctx.reserve(large);
    CHECK(ctx.engine().workspace_capacity() >= ctx.workspace_size(large));
}

TEST_CASE("an output that overlaps an input is refused, naming both") {
    context ctx;
    const problem p{1, 3, 3, 20, 20, 3, 1};
    auto [x, w, y] = testing::make_conv_tensors(p, 5);
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    // x and y inside one allocation, y starting 7 floats into x.
    auto both = reference::make_device_array<float>(2 * p.input_elements());
    expect_error([&] { ctx.conv2d(p, both.data(), w.data(), both.data() + 7); }, status::invalid_argument, "y = ");
    expect_error([&] { ctx.conv2d(p, both.data(), w.data(), both.data() + 7); }, status::invalid_argument,
                 "overlaps x");
    expect_error([&] { ctx.conv2d(p, x.data(), y.data(), y.data()); }, status::invalid_argument, "overlaps w");
    auto dx = reference::make_device_array<float>(p.input_elements());
    expect_error([&] { ctx.conv2d_backward_data(p, y.data(), w.data(), y.data()); }, status::invalid_argument,
                 "dx = ");
    expect_error([&] { ctx.conv2d_backward_filter(p, x.data(), y.data(), x.data()); }, status::invalid_argument,
                 "dw = ");
    testing::check_conv(ctx, p, 6);  // and the context still works
}

TEST_CASE("gradients whose inner convolution is refused name the caller's call and problem") {
    // A 3 x 41 kernel's filter gradient runs as a convolution whose kernel is
    // dy's plane: over the kernel extent limit on a 70000-wide image.
    context ctx;
    const problem p{1, 1, 1, 64, 70000, {3, 41}};
    auto [x, w, y] = testing::make_conv_tensors(p, 7);
    auto dw = reference::make_device_array<float>(p.filter_elements());
    ctx.conv2d(p, x.data(), w.data(), y.data());  // the forward computes
    expect_error([&] { ctx.conv2d_backward_filter(p, x.data(), y.data(), dw.data()); }, status::invalid_argument,
                 "conv2d_backward_filter of problem " + to_string(p));
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
}

TEST_CASE("the gradients keep their buffer and workspace within the workspace limit") {
    context ctx;
    const problem dense{2, 64, 64, 64, 64, 9, 4}, depthwise{4, 32, 32, 56, 56, 31, 15, 32};
    for (const problem& p : {dense, depthwise}) {
        CAPTURE(to_string(p));
        const std::size_t limit = std::size_t{48} << 20;
        context limited;
        limited.set_workspace_limit(limit);
        testing::check_gradients(limited, p, 71);
        const detail::engine& e = limited.engine();
        CHECK(e.workspace_capacity() <= limit);
        CHECK(e.scratch_capacity() <= limit);
        // The data gradient alone: its buffer and its convolution's workspace together.
        context data_only;
        data_only.set_workspace_limit(limit);
        auto dy = reference::make_device_array<float>(p.output_elements());
        auto wt = reference::make_device_array<float>(p.filter_elements());
        auto dx = reference::make_device_array<float>(p.input_elements());
        reference::fill_normal(dy.data(), dy.size, 1, nullptr);
        reference::fill_normal(wt.data(), wt.size, 2, nullptr);
        data_only.conv2d_backward_data(p, dy.data(), wt.data(), dx.data());
        CHECK(data_only.engine().workspace_capacity() + data_only.engine().scratch_capacity() <= limit);
        // Below what the gradient buffer alone needs: out_of_memory, named.
        context starved;
        starved.set_workspace_limit(4096);
        auto x = reference::make_device_array<float>(p.input_elements());
        auto dw = reference::make_device_array<float>(p.filter_elements());
        expect_error([&] { starved.conv2d_backward_filter(p, x.data(), dy.data(), dw.data()); },
                     status::out_of_memory, "conv2d_backward_filter");
    }
}

TEST_CASE("a stream or filter spectrum of another device is refused") {
    int devices = 0;
    FFTCONV_CUDA_TRY(cudaGetDeviceCount(&devices));
    if (devices < 2) {
        MESSAGE("one CUDA device: the cross-device cases need two (not run)");
        return;
    }
    FFTCONV_CUDA_TRY(cudaSetDevice(1));
    testing::stream_holder other;
    const problem p{1, 2, 2, 32, 32, 9};
    context on_one;
    auto w1 = reference::make_device_array<float>(p.filter_elements());
    reference::fill_normal(w1.data(), w1.size, 3, nullptr);
    const filter_spectrum foreign = on_one.transform_filter(p, w1.data());
    FFTCONV_CUDA_TRY(cudaSetDevice(0));
    expect_error([&] { context c(other.s); }, status::invalid_argument, "the stream belongs to CUDA device 1");
    context ctx;
    expect_error([&] { ctx.set_stream(other.s); }, status::invalid_argument, "the stream belongs to CUDA device 1");
    auto [x, w, y] = testing::make_conv_tensors(p, 9);
    expect_error([&] { ctx.conv2d(p, x.data(), foreign, y.data()); }, status::invalid_argument,
                 "the filter spectrum is on CUDA device 1");
    testing::check_conv(ctx, p, 10);
}
