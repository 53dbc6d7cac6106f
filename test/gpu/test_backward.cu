// The gradients (context::conv2d_backward_data / conv2d_backward_filter)
// against their float64 definitions (reference.hpp: data_gradient_gpu,
// filter_gradient_gpu), on random-normal and positive inputs: every operator
// variant — dense, groups, depthwise with channel multipliers, padding
// (none, 'same', even kernels, beyond the kernel), rectangular kernels, batch
// 1..8, odd sizes, fused and cuFFT tile extents, and each of the filter
// gradient's three paths (depthwise, GEMM over blocks, general for kernels
// over 40). Bars: the data gradient
// relative L2 <= 5e-7, the filter gradient <= 1e-6, the bias gradient the
// elementwise bar; every element within 1e-3 + 1e-3 |exact|.
#include "doctest.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "conv_check.hpp"
#include "make_problem.hpp"

using namespace fftconv;

using testing::make;

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
             make(3, 4, 8, 20, 30, 3, 1, 4),                          // depthwise x2, 3 positions: a split of one
             make(1, 4, 4, 50, 47, {45, 5}, {22, 2}, 4),              // depthwise, 45 rows: the general path
             make(2, 3, 3, 3, 70, {9, 3}, {5, 1}, 3),                 // depthwise, filter rows 0 and 8 see only padding
             make(2, 2, 3, 3, 12, {9, 3}, {5, 1}, 1),                 // the same, dense
             make(1, 3, 4, 50, 44, {42, 3}, {0, 1}, 1),               // dense, 42 rows: the general path
             make(3, 8, 4, 70, 33, 5, 2, 2),                          // grouped, 3 x 2 blocks of 28 (32-point grid)
             make(1, 4, 3, 20, 20, 3, 1, 1),                          // one position, odd Cout (a spare slot)
             make(129, 2, 3, 96, 96, 3, 0, 1),                        // 2064 positions: 17 chunks, the last partial
             make(3, 16, 16, 14, 14, 27, same_padding(27), 16),       // one 32-point tile covers the padded image
             make(2, 8, 8, 28, 28, 49, same_padding(49), 8),          // one 64-point tile covers it; K > 40
             make(2, 33, 34, 80, 80, 12, 0, 1),                       // tensor-core GEMM, odd Cin (a spare slot)
             make(11, 33, 34, 72, 72, 16, 8, 1),                      // the same, 275 positions: two chunks
             make(15, 8, 6, 62, 62, 5, 0, 1),                         // 9 positions a sample, 135: chunks of 128 and 7
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
    CHECK_THROWS_WITH_AS(ctx.conv2d_backward_data(p, static_cast<const float*>(nullptr), a.data(), a.data()), doctest::Contains("dy is a null pointer"),
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

namespace {

// x and dy of `p`, random normal from `seed`, the stream drained so that
// the host may edit them (set, scale).
struct gradient_inputs {
    reference::device_array<float> x, dy;
};

gradient_inputs normal_inputs(context& ctx, const problem& p, std::uint64_t seed) {
    using namespace reference;
    gradient_inputs in{make_device_array<float>(p.input_elements()), make_device_array<float>(p.output_elements())};
    fill_input(input_kind::normal, in.x.data(), in.x.size, seed, ctx.stream());
    fill_input(input_kind::normal, in.dy.data(), in.dy.size, seed + 1, ctx.stream());
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
    return in;
}

void set_element(float* device, std::int64_t index, float value) {
    FFTCONV_CUDA_TRY(cudaMemcpy(device + index, &value, sizeof value, cudaMemcpyHostToDevice));
}

// fftconv's dw and its float64 definition, on the host.
struct filter_gradients {
    std::vector<float> got;
    std::vector<double> exact;
    // Output channel o's rows of each.
    std::vector<float> got_row(const problem& p, std::int64_t o) const { return row(got, p, o); }
    std::vector<double> exact_row(const problem& p, std::int64_t o) const { return row(exact, p, o); }
    template <class T>
    static std::vector<T> row(const std::vector<T>& v, const problem& p, std::int64_t o) {
        const std::int64_t n = p.group_in_channels() * p.kernel.height * p.kernel.width;
        return std::vector<T>(v.begin() + o * n, v.begin() + (o + 1) * n);
    }
};

filter_gradients run_filter_gradient(context& ctx, const problem& p, const gradient_inputs& in) {
    using namespace reference;
    auto dw = make_device_array<float>(p.filter_elements());
    auto exact = make_device_array<double>(p.filter_elements());
    ctx.conv2d_backward_filter(p, in.x.data(), in.dy.data(), dw.data());
    filter_gradient_gpu(p, in.x.data(), in.dy.data(), exact.data(), nullptr, ctx.stream());
    return {to_host(dw.data(), dw.size), to_host(exact.data(), exact.size)};
}

bool any_non_finite(const std::vector<float>& v) {
    return std::any_of(v.begin(), v.end(), [](float e) { return !std::isfinite(e); });
}

// The GEMM path cuts its positions into chunks that half the workspace limit
// holds: one position a chunk (its transform pairs two channels), or an odd
// count rounded down to an even one (a pair is two positions of a channel),
// or every position at once. Here 3 samples of 9 positions (62^2, K = 5, on
// the 32-point grid); a position's spectra take 6 slots (4 of x, 2 of dy)
// of 32 x 17 bins, slot = 4352 bytes (a chunk's rounded up to a multiple of
// 4 slots), and the buffer beside them holds the gradient's spectrum and
// its double sum (4 + 8 slots): a limit of s slots makes chunks of s / 12
// positions.
TEST_CASE("the filter gradient is exact whatever chunks the workspace limit makes") {
    const problem p = make(3, 4, 1, 62, 62, 5, 0, 1);
    constexpr std::size_t slot = 32 * 17 * sizeof(float) * 2;
    context ctx;
    const gradient_inputs in = normal_inputs(ctx, p, 97);
    for (const std::size_t slots : {22, 30, 40, 66, 240, 1000}) {  // chunks of 1, 2, 3 -> 2, 5 -> 4, 20, all 27
        CAPTURE(slots);
        context limited;
        limited.set_workspace_limit(slots * slot);
        const filter_gradients g = run_filter_gradient(limited, p, in);
        const reference::accuracy a = reference::compare(g.got, g.exact);
        INFO("rel_l2=", a.relative_l2, " worst=", a.worst_fraction);
        CHECK(a.passes(reference::max_filter_gradient_l2));
    }
}

}  // namespace

TEST_CASE("a non-finite input reaches only its own channel's depthwise filter gradient") {
    context ctx;
    const problem p = make(2, 6, 6, 40, 40, 31, 15, 6);  // 2 x 2 blocks per sample
    const gradient_inputs in = normal_inputs(ctx, p, 77);
    const std::int64_t poisoned = 4;  // channel 4 of sample 1, an inner pixel
    set_element(in.x.data(), ((1 * p.in_channels + poisoned) * p.height + 20) * p.width + 7,
                std::numeric_limits<float>::quiet_NaN());
    const filter_gradients g = run_filter_gradient(ctx, p, in);
    for (std::int64_t o = 0; o < p.out_channels; ++o) {
        CAPTURE(o);
        if (o == poisoned) CHECK(any_non_finite(g.got_row(p, o)));
        else CHECK(reference::compare(g.got_row(p, o), g.exact_row(p, o)).passes(reference::max_filter_gradient_l2));
    }
}

// In training dy is often orders of magnitude smaller than x; a transform
// that mixed the two would round dy's spectrum to x's magnitude.
TEST_CASE("the filter gradient keeps its accuracy when dy is 10^4 times smaller than x") {
    context ctx;
    for (const problem& p : {make(4, 8, 8, 56, 56, 31, 15, 8),   // depthwise (fused path)
                             make(2, 8, 8, 40, 40, 9, 4, 1)}) {  // dense (GEMM path)
        CAPTURE(to_string(p));
        const gradient_inputs in = normal_inputs(ctx, p, 91);
        std::vector<float> small = reference::to_host(in.dy.data(), in.dy.size);
        for (float& v : small) v *= 1e-4f;
        FFTCONV_CUDA_TRY(
            cudaMemcpy(in.dy.data(), small.data(), sizeof(float) * small.size(), cudaMemcpyHostToDevice));
        const filter_gradients g = run_filter_gradient(ctx, p, in);
        const reference::accuracy a = reference::compare(g.got, g.exact);
        INFO("rel_l2=", a.relative_l2, " worst=", a.worst_fraction);
        CHECK(a.passes(reference::max_filter_gradient_l2));
    }
}

// On its 32-point grid (kernels up to 8) the GEMM path transforms two
// positions of one dy channel as a pair, and its inverse pairs two input
// channels of one output channel: a non-finite dy in channel o reaches that
// row of dw and no other.
TEST_CASE("a non-finite dy reaches only its output channel's filter gradient") {
    context ctx;
    const problem p = make(2, 3, 5, 40, 40, 7, 3, 1);
    const gradient_inputs in = normal_inputs(ctx, p, 81);
    const std::int64_t poisoned = 2;  // dy channel 2 of sample 1
    set_element(in.dy.data(), ((1 * p.out_channels + poisoned) * p.out_height() + 10) * p.out_width() + 10,
                std::numeric_limits<float>::infinity());
    const filter_gradients g = run_filter_gradient(ctx, p, in);
    for (std::int64_t o = 0; o < p.out_channels; ++o) {
        CAPTURE(o);
        if (o == poisoned) CHECK(any_non_finite(g.got_row(p, o)));
        else
            CHECK(reference::compare(g.got_row(p, o), g.exact_row(p, o)).passes(reference::max_filter_gradient_l2));
    }
}

// The GEMM path pairs input channels c and c ^ 1 of a group (c counted
// within it) in its inverse transforms (and on 64 points in its transforms
// of x): a
// non-finite x in channel c reaches dw[:, c] and its partner's taps and no
// other input channel's.
TEST_CASE("a non-finite x reaches at most two input channels' filter gradient") {
    context ctx;
    for (const problem& p : {make(2, 33, 34, 80, 80, 12, 0, 1),   // tensor-core GEMM: 3's partner is 2
                             make(2, 6, 4, 40, 40, 7, 3, 2)}) {  // cuBLAS, groups of 3: 3's partner is 4
        CAPTURE(to_string(p));
        const gradient_inputs in = normal_inputs(ctx, p, 83);
        const std::int64_t poisoned = 3;  // x channel 3 of sample 1, an inner pixel
        set_element(in.x.data(), ((1 * p.in_channels + poisoned) * p.height + 20) * p.width + 17,
                    std::numeric_limits<float>::quiet_NaN());
        const filter_gradients g = run_filter_gradient(ctx, p, in);
        const std::int64_t cg = p.group_in_channels(), og = p.group_out_channels();
        // The partner, within the poisoned channel's group; none when that is the group's spare slot.
        const std::int64_t local_partner = (poisoned % cg) ^ 1;
        const std::int64_t partner = local_partner < cg ? poisoned / cg * cg + local_partner : -1;
        const std::int64_t taps = p.kernel.height * p.kernel.width;
        for (std::int64_t c = 0; c < p.in_channels; ++c) {
            CAPTURE(c);
            // Input channel c's taps in the rows of its group's output channels.
            std::vector<float> got;
            std::vector<double> exact;
            for (std::int64_t o = c / cg * og; o < (c / cg + 1) * og; ++o) {
                const std::int64_t at = (o * cg + c % cg) * taps;
                got.insert(got.end(), g.got.begin() + at, g.got.begin() + at + taps);
                exact.insert(exact.end(), g.exact.begin() + at, g.exact.begin() + at + taps);
            }
            if (c == poisoned) CHECK(any_non_finite(got));
            else if (c != partner)
                CHECK(reference::compare(got, exact).passes(reference::max_filter_gradient_l2));
        }
    }
}
