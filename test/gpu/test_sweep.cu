// The long sweep: 1000 seeded random valid problems (extents 1...600, K from 1
// to the image, channels 1...300, batch 1...16), each on random-normal and on
// positive uniform [0, 1) inputs, against the float64 oracle; then 1000 more
// drawing the whole operator (rectangular kernels, padding up to beyond the
// kernel, groups from 1 to depthwise with channel multipliers, bias on or
// off), and the data, filter and bias gradients of 1000 more such. Problems
// whose oracle would exceed oracle_budget multiply-adds are redrawn, so the
// sweep takes minutes, not hours; the draw still reaches every corner of the
// ranges.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <utility>

#include "conv_check.hpp"

using namespace fftconv;

namespace {

constexpr int count = 1000;                                 // problems per sweep
constexpr double oracle_budget = 1e9;                       // multiply-adds of the float64 oracle
constexpr std::int64_t max_tensor = std::int64_t{1} << 25;  // elements of x or y

// Random extents: uniform(lo, hi), or draw(lo, hi) — half the time uniform,
// half log-uniform (small values often). The log-uniform draw runs over
// lo + 1 ... hi + 1 and shifts back, so lo may be 0 (a padding).
struct extent_draws {
    std::mt19937_64 rng;
    std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
    }
    std::int64_t operator()(std::int64_t lo, std::int64_t hi) {
        if (uniform(0, 1) == 0) return uniform(lo, hi);
        const double u = std::uniform_real_distribution<double>(std::log(double(lo) + 1), std::log(double(hi) + 2))(rng);
        return std::clamp<std::int64_t>(std::int64_t(std::exp(u)) - 1, lo, hi);
    }
};

// A random problem of the whole operator (rectangular kernels, padding up to
// beyond the kernel, groups from 1 to depthwise with channel multipliers)
// and whether it takes a bias, within the oracle's budget.
struct operator_draw {
    problem p;
    bool with_bias = false;
};

operator_draw draw_operator(extent_draws& draw) {
    auto uniform = [&](std::int64_t lo, std::int64_t hi) { return draw.uniform(lo, hi); };
    for (;;) {
        problem p;
        p.batch = draw(1, 8);
        const std::int64_t groups_kind = uniform(0, 3);  // 0, 1: dense; 2: grouped; 3: depthwise
        const std::int64_t groups = groups_kind <= 1 ? 1 : draw(1, 64);
        const std::int64_t multiplier = groups_kind == 3 ? uniform(1, 3) : draw(1, std::max<std::int64_t>(1, 256 / groups));
        p.groups = groups;
        p.in_channels = groups * (groups_kind == 3 ? 1 : draw(1, std::max<std::int64_t>(1, 256 / groups)));
        p.out_channels = groups * multiplier;
        p.height = draw(1, 400);
        p.width = uniform(0, 3) == 0 ? p.height : draw(1, 400);
        const std::int64_t pad_kind = uniform(0, 3);  // none, 'same', random, random per axis
        const std::int64_t kh = draw(1, 64), kw = uniform(0, 2) == 0 ? kh : draw(1, 64);
        p.kernel = {kh, kw};
        if (pad_kind == 1) p.padding = same_padding(p.kernel);
        if (pad_kind >= 2) p.padding = {draw(0, kh + 2), pad_kind == 2 ? 0 : draw(0, kw + 2)};
        const bool with_bias = uniform(0, 1) == 1;
        if (p.kernel.height > p.padded_height() || p.kernel.width > p.padded_width()) continue;
        const double oracle = double(p.output_elements()) * double(p.group_in_channels()) *
                              double(p.kernel.height) * double(p.kernel.width);
        if (oracle <= oracle_budget && p.input_elements() <= max_tensor && p.output_elements() <= max_tensor)
            return {p, with_bias};
    }
}

// What a sweep over operator problems covered.
struct operator_coverage {
    int grouped = 0, depthwise = 0, direct = 0, padded = 0, rectangular = 0, biased = 0;
    void add(const operator_draw& d, path_kind path = path_kind::generic) {  // gradients: not counted by path
        const problem& p = d.p;
        depthwise += p.groups > 1 && p.group_in_channels() == 1;
        direct += path == path_kind::direct;
        grouped += p.groups > 1;
        padded += p.padding != extent2d{0};
        rectangular += p.kernel.height != p.kernel.width;
        biased += d.with_bias;
    }
    void print() const {
        std::printf("%d grouped (%d depthwise, %d on the direct path), %d padded, %d rectangular, %d with bias\n",
                    grouped, depthwise, direct, padded, rectangular, biased);
    }
};

}  // namespace

TEST_CASE("1000 random valid problems, both input distributions, against float64") {
    context ctx;
    extent_draws draw{std::mt19937_64(20261130)};
    double worst_l2 = 0, worst_fraction = 0;
    std::map<int, int> tiles;
    int compiled = 0;
    for (int i = 0; i < count; ++i) {
        problem p;
        for (;;) {
            p.batch = draw(1, 16);
            p.in_channels = draw(1, 300);
            p.out_channels = draw.uniform(0, 3) == 0 ? p.in_channels : draw(1, 300);
            p.height = draw(1, 600);
            p.width = draw.uniform(0, 3) == 0 ? p.height : draw(1, 600);
            p.kernel = draw(1, std::min(p.height, p.width));
            const double oracle = double(p.output_elements()) * double(p.in_channels) *
                                  double(p.kernel.height) * double(p.kernel.height);
            if (oracle <= oracle_budget && p.input_elements() <= max_tensor && p.output_elements() <= max_tensor)
                break;
        }
        CAPTURE(i);
        const auto a = testing::check_conv(ctx, p, 5000 + 2 * std::uint64_t(i));
        worst_l2 = std::max(worst_l2, a.relative_l2);
        worst_fraction = std::max(worst_fraction, a.worst_fraction);
        ++tiles[ctx.plan(p).geometry.tile_extent()];
        compiled += ctx.plan(p).path == path_kind::compiled;
    }
    std::printf("%d random problems x 2 distributions: worst rel_l2=%.3g, worst element %.3f of tolerance; "
                "%d on compiled entries; tile extents:", count, worst_l2, worst_fraction, compiled);
    for (const auto& [t, n] : tiles) std::printf(" %d:%d", t, n);
    std::printf("\n");
}

TEST_CASE("1000 random problems of the whole operator, both input distributions, against float64") {
    context ctx;
    extent_draws draw{std::mt19937_64(20261201)};
    double worst_l2 = 0, worst_fraction = 0;
    operator_coverage coverage;
    for (int i = 0; i < count; ++i) {
        const operator_draw d = draw_operator(draw);
        CAPTURE(i);
        const bool reuse = i % 7 == 0;  // through a filter spectrum: always the transforms
        const auto a = testing::check_operator(ctx, d.p, d.with_bias, reuse, 9000 + 2 * std::uint64_t(i));
        worst_l2 = std::max(worst_l2, a.relative_l2);
        worst_fraction = std::max(worst_fraction, a.worst_fraction);
        coverage.add(d, reuse ? path_kind::generic : ctx.plan(d.p).path);
    }
    std::printf("%d random operator problems x 2 distributions: worst rel_l2=%.3g, worst element %.3f of "
                "tolerance; ", count, worst_l2, worst_fraction);
    coverage.print();
}

// The gradients of the same kind of problems (a fresh draw): dx, dw and the
// bias gradient against their float64 definitions.
TEST_CASE("1000 random problems' data, filter and bias gradients, both input distributions, against float64") {
    context ctx;
    extent_draws draw{std::mt19937_64(20261202)};
    double worst_dx = 0, worst_dw = 0, worst_fraction = 0;
    std::string worst_at;  // where the worst element was: which gradient of which problem
    operator_coverage coverage;
    for (int i = 0; i < count; ++i) {
        const operator_draw d = draw_operator(draw);
        CAPTURE(i);
        const auto a = testing::check_gradients(ctx, d.p, 40000 + 2 * std::uint64_t(i));
        worst_dx = std::max(worst_dx, a.data.relative_l2);
        worst_dw = std::max(worst_dw, a.filter.relative_l2);
        for (const auto& [name, part] : {std::pair{"dx", a.data}, std::pair{"dw", a.filter}, std::pair{"dbias", a.bias}})
            if (part.worst_fraction > worst_fraction) {
                worst_fraction = part.worst_fraction;
                worst_at = std::string(name) + " element " + std::to_string(part.worst_index) + " of problem " +
                           std::to_string(i) + " (" + to_string(d.p) + ")";
            }
        coverage.add(d);
    }
    std::printf("%d random problems' gradients x 2 distributions: worst rel_l2 dx=%.3g, dw=%.3g, worst element "
                "%.3f of tolerance, %s; ", count, worst_dx, worst_dw, worst_fraction, worst_at.c_str());
    coverage.print();
}
