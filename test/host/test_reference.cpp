// The CPU float64 oracle (reference::direct_conv_cpu) against constructions
// that do not share its padding, group or bias logic: an explicitly
// zero-padded input, per-group slices, the bias added afterwards, a scatter
// loop written here, and a hand-computed example. No CUDA call: the GPU
// oracle runs the same per-output function (reference.cu, output_at) but is
// only compiled here.
//
// (a)-(c) compare with ==: the construction sums the same nonzero products in
// the same order (a skipped padding tap only leaves out a +-0 term), so the
// results must agree to the last bit. The scatter loop sums in another order
// and is compared to 1e-12 of the sum of |products|.
#include "doctest.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fftconv/problem.hpp"
#include "fftconv/status.hpp"
#include "reference.hpp"

using namespace fftconv;
using reference::direct_conv_cpu;

namespace {

using i64 = std::int64_t;

std::vector<float> random_floats(i64 n, std::uint64_t seed) {
    std::mt19937_64 engine(seed);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> v(static_cast<std::size_t>(n));
    for (float& f : v) f = uniform(engine);
    return v;
}

// x [B, C, H, W] with pad_h zero rows above and below and pad_w zero columns
// left and right: [B, C, H + 2 pad_h, W + 2 pad_w].
std::vector<float> zero_padded(const std::vector<float>& x, i64 batch_channels, i64 h, i64 w, i64 pad_h,
                               i64 pad_w) {
    const i64 ph = h + 2 * pad_h, pw = w + 2 * pad_w;
    std::vector<float> out(static_cast<std::size_t>(batch_channels * ph * pw), 0.0f);
    for (i64 n = 0; n < batch_channels; ++n)
        for (i64 r = 0; r < h; ++r)
            for (i64 c = 0; c < w; ++c)
                out[std::size_t((n * ph + r + pad_h) * pw + c + pad_w)] = x[std::size_t((n * h + r) * w + c)];
    return out;
}

// Channels [first, first + count) of a [outer, channels, inner] tensor.
std::vector<float> channel_slice(const std::vector<float>& t, i64 outer, i64 channels, i64 inner, i64 first,
                                 i64 count) {
    std::vector<float> out;
    for (i64 n = 0; n < outer; ++n)
        for (i64 c = first; c < first + count; ++c)
            for (i64 k = 0; k < inner; ++k) out.push_back(t[std::size_t((n * channels + c) * inner + k)]);
    return out;
}

// conv2d by scattering: every input element times every filter tap, added
// to the output it lands on. Returns the sums and, in magnitude, the sums of
// |products| (the scale of the rounding error).
struct scattered {
    std::vector<double> y, magnitude;
};

scattered scatter_conv(const problem& p, const std::vector<float>& x, const std::vector<float>& w,
                       const std::vector<float>* bias) {
    const i64 ho = p.height + 2 * p.padding.height - p.kernel.height + 1;
    const i64 wo = p.width + 2 * p.padding.width - p.kernel.width + 1;
    const i64 cg = p.in_channels / p.groups, og = p.out_channels / p.groups;
    scattered s;
    s.y.assign(std::size_t(p.batch * p.out_channels * ho * wo), 0.0);
    s.magnitude = s.y;
    for (i64 b = 0; b < p.batch; ++b)
        for (i64 ci = 0; ci < p.in_channels; ++ci)
            for (i64 r = 0; r < p.height; ++r)
                for (i64 c = 0; c < p.width; ++c) {
                    const double xv = x[std::size_t(((b * p.in_channels + ci) * p.height + r) * p.width + c)];
                    const i64 g = ci / cg;
                    for (i64 o = g * og; o < (g + 1) * og; ++o)
                        for (i64 u = 0; u < p.kernel.height; ++u)
                            for (i64 v = 0; v < p.kernel.width; ++v) {
                                // x[r, c] meets w[u, v] at output (r + pad_h - u, c + pad_w - v).
                                const i64 i = r + p.padding.height - u, j = c + p.padding.width - v;
                                if (i < 0 || i >= ho || j < 0 || j >= wo) continue;
                                const double wv = w[std::size_t(
                                    ((o * cg + ci % cg) * p.kernel.height + u) * p.kernel.width + v)];
                                const std::size_t at = std::size_t(((b * p.out_channels + o) * ho + i) * wo + j);
                                s.y[at] += xv * wv;
                                s.magnitude[at] += std::abs(xv * wv);
                            }
                }
    if (bias)
        for (i64 b = 0; b < p.batch; ++b)
            for (i64 o = 0; o < p.out_channels; ++o)
                for (i64 k = 0; k < ho * wo; ++k) {
                    const std::size_t at = std::size_t((b * p.out_channels + o) * ho * wo + k);
                    s.y[at] += (*bias)[std::size_t(o)];
                    s.magnitude[at] += std::abs((*bias)[std::size_t(o)]);
                }
    return s;
}

// Small random problems covering the operator: square and rectangular
// kernels, no / symmetric / asymmetric padding (including a pad as large as
// the kernel), groups 1, 2, depthwise, and a kernel larger than the image
// that padding makes fit.
std::vector<problem> small_problems() {
    return {
        {.batch = 2, .in_channels = 3, .out_channels = 4, .height = 7, .width = 9, .kernel = 3},
        {.batch = 1, .in_channels = 2, .out_channels = 3, .height = 6, .width = 5, .kernel = {3, 5},
         .padding = {1, 2}},
        {.batch = 2, .in_channels = 4, .out_channels = 6, .height = 8, .width = 7, .kernel = {1, 4},
         .padding = {0, 3}, .groups = 2},
        {.batch = 1, .in_channels = 6, .out_channels = 6, .height = 5, .width = 8, .kernel = {4, 1},
         .padding = {2, 0}, .groups = 3},
        {.batch = 2, .in_channels = 4, .out_channels = 8, .height = 6, .width = 6, .kernel = 3, .padding = 1,
         .groups = 4},  // depthwise, two outputs per channel
        {.batch = 1, .in_channels = 2, .out_channels = 2, .height = 4, .width = 5, .kernel = {2, 3},
         .padding = {2, 3}, .groups = 2},  // pad = kernel: border outputs see only zeros
        {.batch = 1, .in_channels = 1, .out_channels = 2, .height = 3, .width = 4, .kernel = {5, 6},
         .padding = {1, 1}},  // kernel larger than the image
        {.batch = 1, .in_channels = 5, .out_channels = 5, .height = 9, .width = 9, .kernel = 9,
         .padding = 4, .groups = 5},  // depthwise 'same'
    };
}

std::uint64_t seed_of(const problem& p, std::uint64_t salt) {
    return std::hash<std::string>{}(to_string(p)) ^ salt;
}

struct inputs {
    std::vector<float> x, w, bias;
};

inputs random_inputs(const problem& p) {
    return {random_floats(p.input_elements(), seed_of(p, 1)), random_floats(p.filter_elements(), seed_of(p, 2)),
            random_floats(p.out_channels, seed_of(p, 3))};
}

}  // namespace

TEST_CASE("the test problems are valid and their extents are conv2d's") {
    for (const problem& p : small_problems()) {
        CAPTURE(to_string(p));
        CHECK_NOTHROW(validate(p));
        CHECK(p.out_height() == p.height + 2 * p.padding.height - p.kernel.height + 1);
        CHECK(p.out_width() == p.width + 2 * p.padding.width - p.kernel.width + 1);
        CHECK(direct_conv_cpu(p, random_inputs(p).x, random_inputs(p).w).size() ==
              std::size_t(p.output_elements()));
    }
}

TEST_CASE("(a) padding: the oracle equals the unpadded oracle on an explicitly zero-padded input") {
    for (const problem& p : small_problems()) {
        CAPTURE(to_string(p));
        const inputs in = random_inputs(p);
        problem unpadded = p;
        unpadded.height = p.padded_height();
        unpadded.width = p.padded_width();
        unpadded.padding = 0;
        const std::vector<float> xpad =
            zero_padded(in.x, p.batch * p.in_channels, p.height, p.width, p.padding.height, p.padding.width);
        REQUIRE(xpad.size() == std::size_t(unpadded.input_elements()));
        CHECK(direct_conv_cpu(p, in.x, in.w) == direct_conv_cpu(unpadded, xpad, in.w));
        CHECK(direct_conv_cpu(p, in.x, in.w, &in.bias) == direct_conv_cpu(unpadded, xpad, in.w, &in.bias));
    }
}

TEST_CASE("(b) groups: the oracle equals groups=1 oracles on each group's slices, concatenated") {
    for (const problem& p : small_problems()) {
        if (p.groups == 1) continue;
        CAPTURE(to_string(p));
        const inputs in = random_inputs(p);
        const i64 cg = p.group_in_channels(), og = p.group_out_channels();
        const i64 hw = p.height * p.width, taps = cg * p.kernel.height * p.kernel.width;
        const i64 out_hw = p.out_height() * p.out_width();
        problem one = p;
        one.in_channels = cg;
        one.out_channels = og;
        one.groups = 1;
        std::vector<double> expected(std::size_t(p.output_elements()));
        for (i64 g = 0; g < p.groups; ++g) {
            const std::vector<float> xg = channel_slice(in.x, p.batch, p.in_channels, hw, g * cg, cg);
            const std::vector<float> wg = channel_slice(in.w, 1, p.out_channels, taps, g * og, og);
            const std::vector<float> bg(in.bias.begin() + g * og, in.bias.begin() + (g + 1) * og);
            const std::vector<double> yg = direct_conv_cpu(one, xg, wg, &bg);
            // yg is [B, og, Ho, Wo]: group g's output channels of each batch.
            for (i64 b = 0; b < p.batch; ++b)
                for (i64 k = 0; k < og * out_hw; ++k)
                    expected[std::size_t((b * p.out_channels + g * og) * out_hw + k)] =
                        yg[std::size_t(b * og * out_hw + k)];
        }
        CHECK(direct_conv_cpu(p, in.x, in.w, &in.bias) == expected);
    }
}

TEST_CASE("(c) bias: the oracle with bias equals the oracle without, plus bias[o]") {
    for (const problem& p : small_problems()) {
        CAPTURE(to_string(p));
        const inputs in = random_inputs(p);
        std::vector<double> expected = direct_conv_cpu(p, in.x, in.w);
        const i64 out_hw = p.out_height() * p.out_width();
        for (i64 b = 0; b < p.batch; ++b)
            for (i64 o = 0; o < p.out_channels; ++o)
                for (i64 k = 0; k < out_hw; ++k)
                    expected[std::size_t((b * p.out_channels + o) * out_hw + k)] += double(in.bias[std::size_t(o)]);
        CHECK(direct_conv_cpu(p, in.x, in.w, &in.bias) == expected);
        CHECK(direct_conv_cpu(p, in.x, in.w, nullptr) == direct_conv_cpu(p, in.x, in.w));
    }
}

TEST_CASE("(d) rectangular kernels, padding, groups and bias against a scatter loop") {
    std::vector<problem> problems = small_problems();
    for (const extent2d k : {extent2d{1, 5}, extent2d{5, 1}, extent2d{3, 5}, extent2d{5, 3}, extent2d{2, 4}})
        problems.push_back({.batch = 2, .in_channels = 4, .out_channels = 2, .height = 7, .width = 6, .kernel = k,
                            .padding = {k.height / 2, k.width / 2}, .groups = 2});
    for (const problem& p : problems) {
        CAPTURE(to_string(p));
        const inputs in = random_inputs(p);
        for (const std::vector<float>* bias : {static_cast<const std::vector<float>*>(nullptr), &in.bias}) {
            CAPTURE(bias != nullptr);
            const std::vector<double> y = direct_conv_cpu(p, in.x, in.w, bias);
            const scattered s = scatter_conv(p, in.x, in.w, bias);
            REQUIRE(y.size() == s.y.size());
            i64 bad = 0;
            for (std::size_t k = 0; k < y.size(); ++k)
                if (!(std::abs(y[k] - s.y[k]) <= 1e-12 * s.magnitude[k])) ++bad;
            CHECK(bad == 0);
        }
    }
}

TEST_CASE("(e) a hand-computed example: 3x3 image, 2x2 kernel, padding 1, bias") {
    // x = 1 2 3    w = 1 2    the 5x5 padded x, correlated with w: y[i, j] =
    //     4 5 6        3 4    xpad[i, j] + 2 xpad[i, j+1] + 3 xpad[i+1, j] + 4 xpad[i+1, j+1]
    //     7 8 9
    const problem p{.batch = 1, .in_channels = 1, .out_channels = 1, .height = 3, .width = 3, .kernel = 2,
                    .padding = 1};
    const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8, 9}, w{1, 2, 3, 4};
    const std::vector<double> expected{
        4,  11, 18, 9,   // row 0: only w's bottom row meets x
        18, 37, 47, 21,  // e.g. 1*1 + 2*2 + 4*3 + 5*4 = 37
        36, 67, 77, 33,  //
        14, 23, 26, 9,   // row 3: only w's top row meets x
    };
    CHECK(direct_conv_cpu(p, x, w) == expected);
    const std::vector<float> bias{0.5f};
    std::vector<double> biased = expected;
    for (double& v : biased) v += 0.5;
    CHECK(direct_conv_cpu(p, x, w, &bias) == biased);

    // Unpadded, the 2x2 interior of the above.
    CHECK(direct_conv_cpu({.height = 3, .width = 3, .kernel = 2}, x, w) == std::vector<double>{37, 47, 67, 77});

    // A rectangular 1x3 kernel, padding (0, 1): each row's moving sum with weights 1, 10, 100.
    CHECK(direct_conv_cpu({.height = 3, .width = 3, .kernel = {1, 3}, .padding = {0, 1}}, x, {1, 10, 100}) ==
          std::vector<double>{210, 321, 32, 540, 654, 65, 870, 987, 98});
}

TEST_CASE("(e) a hand-computed grouped example: 2 groups of a 1x1 kernel, bias") {
    // Channel 0 of x = 1 2 / 3 4, channel 1 = 5 6 / 7 8; groups = 2, so output
    // channel o sees input channel o only: y[0] = 2 x[0] + 1, y[1] = -3 x[1] - 1.
    const problem p{.batch = 1, .in_channels = 2, .out_channels = 2, .height = 2, .width = 2, .kernel = 1,
                    .groups = 2};
    const std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8}, w{2, -3}, bias{1, -1};
    CHECK(direct_conv_cpu(p, x, w, &bias) == std::vector<double>{3, 5, 7, 9, -16, -19, -22, -25});
    // groups = 1 with the same channels: each output sums both input channels.
    const problem dense{.batch = 1, .in_channels = 2, .out_channels = 1, .height = 2, .width = 2, .kernel = 1};
    CHECK(direct_conv_cpu(dense, x, {2, -3}) == std::vector<double>{-13, -14, -15, -16});
}

TEST_CASE("the oracle refuses wrong sizes and invalid problems by name") {
    const problem p{.batch = 1, .in_channels = 2, .out_channels = 4, .height = 4, .width = 4, .kernel = 3,
                    .padding = 1, .groups = 2};
    const std::vector<float> x(32), w(4 * 1 * 9), bias(4);
    CHECK_NOTHROW(direct_conv_cpu(p, x, w, &bias));
    const auto message = [](auto&& call) -> std::string {
        try {
            call();
        } catch (const error& e) {
            CHECK(e.code() == status::invalid_argument);
            return e.what();
        }
        return "(nothing thrown)";
    };
    const auto contains = [](const std::string& s, const std::string& part) {
        return s.find(part) != std::string::npos;
    };
    // w is [out_channels, in_channels / groups, kh, kw]: 36 floats here, not 72.
    CHECK(contains(message([&] { direct_conv_cpu(p, x, std::vector<float>(72), &bias); }),
                   "w has 72 elements, the problem needs 36"));
    CHECK(contains(message([&] { direct_conv_cpu(p, std::vector<float>(31), w, &bias); }),
                   "x has 31 elements, the problem needs 32"));
    const std::vector<float> short_bias(3);
    CHECK(contains(message([&] { direct_conv_cpu(p, x, w, &short_bias); }),
                   "bias has 3 elements, the problem needs 4"));
    problem bad_groups = p;
    bad_groups.groups = 3;
    CHECK(contains(message([&] { direct_conv_cpu(bad_groups, x, w); }), "problem.groups = 3 must divide"));
    problem strided = p;
    strided.stride = 2;
    CHECK(contains(message([&] { direct_conv_cpu(strided, x, w); }), "problem.stride = 2 is not supported"));
}
