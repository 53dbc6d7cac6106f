// Every sample and every channel as accurate as if it were computed alone:
// on each path (fused dense, fused depthwise at power-of-two and radix-3
// tiles, cuFFT, direct; data, filter and bias gradients) one slice of an
// input is scaled by 1e-6 or 1e6 against the others, and every slice of the
// result (each sample, each output channel, each input channel of a
// gradient) is held to the accuracy bar against its own float64 values. The
// paths pair two real tiles in one complex transform; without a per-partner
// scale the smaller partner keeps only the larger one's absolute precision.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "conv_check.hpp"
#include "fftconv/detail/runtime/check.hpp"

using namespace fftconv;
using reference::accuracy;
using reference::input_kind;

namespace {

// A 4-D tensor's extents [d0][d1][rest], as the slices are taken: along d0
// (samples of x, y, dx; output channels of w, dw) and along d1 (channels).
struct extents {
    std::int64_t d0, d1, rest;
};

// Scales slices of a device tensor in place: element [i][j][...] by
// factor(i, j).
void scale_slices(float* device, extents e, const std::function<double(std::int64_t, std::int64_t)>& factor) {
    std::vector<float> host = reference::to_host(device, e.d0 * e.d1 * e.rest);
    for (std::int64_t i = 0; i < e.d0; ++i)
        for (std::int64_t j = 0; j < e.d1; ++j)
            for (std::int64_t k = 0; k < e.rest; ++k) host[(i * e.d1 + j) * e.rest + k] *= float(factor(i, j));
    FFTCONV_CUDA_TRY(cudaMemcpy(device, host.data(), sizeof(float) * host.size(), cudaMemcpyHostToDevice));
}

// How large the slices of a result are made by the inputs' scaling:
// element [i][j][...] of the result is about factor(i, j) times what it would
// be unscaled (for a result that sums slices of several factors, the largest
// sum's).
using slice_factor = std::function<double(std::int64_t, std::int64_t)>;

// The worst slice of `got` against `exact` along axis 0 and along axis 1,
// each slice judged alone: its relative L2, and its elements against the bar
// after dividing both by the slice's factor (what the slice would be
// unscaled: the elementwise bar's absolute term is for unit-scale data).
struct slice_result {
    accuracy worst;
    std::string where;
};

slice_result worst_slice(const std::vector<float>& got, const std::vector<double>& exact, extents e,
                         double l2_bar, const slice_factor& factor) {
    slice_result r;
    double worst_score = -1;
    auto judge = [&](const std::vector<float>& g, const std::vector<double>& x, const std::vector<double>& f,
                     const std::string& name) {
        accuracy a = reference::compare(g, x);
        std::vector<float> g_unscaled(g.size());
        std::vector<double> x_unscaled(x.size());
        for (std::size_t k = 0; k < g.size(); ++k) {
            g_unscaled[k] = float(double(g[k]) / f[k]);
            x_unscaled[k] = x[k] / f[k];
        }
        a.worst_fraction = reference::compare(g_unscaled, x_unscaled).worst_fraction;
        const double score = a.non_finite > 0 ? std::numeric_limits<double>::infinity()
                                              : std::max(a.relative_l2 / l2_bar, a.worst_fraction);
        if (score > worst_score) {
            worst_score = score;
            r.worst = a;
            r.where = name;
        }
    };
    auto slice = [&](std::int64_t i0, std::int64_t i1, std::int64_t j0, std::int64_t j1, const std::string& name) {
        std::vector<float> g;
        std::vector<double> x, f;
        for (std::int64_t i = i0; i < i1; ++i)
            for (std::int64_t j = j0; j < j1; ++j)
                for (std::int64_t k = 0; k < e.rest; ++k) {
                    g.push_back(got[(i * e.d1 + j) * e.rest + k]);
                    x.push_back(exact[(i * e.d1 + j) * e.rest + k]);
                    f.push_back(factor(i, j));
                }
        judge(g, x, f, name);
    };
    for (std::int64_t i = 0; i < e.d0; ++i) slice(i, i + 1, 0, e.d1, "axis 0 slice " + std::to_string(i));
    for (std::int64_t j = 0; j < e.d1; ++j) slice(0, e.d0, j, j + 1, "axis 1 slice " + std::to_string(j));
    return r;
}

void check_slices(const slice_result& r, double l2_bar, const std::string& what) {
    INFO(what, ": worst ", r.where, " rel_l2=", r.worst.relative_l2, " worst=", r.worst.worst_fraction,
         " non_finite=", r.worst.non_finite);
    CHECK(r.worst.non_finite == 0);
    CHECK(r.worst.relative_l2 <= l2_bar);
    CHECK(r.worst.worst_fraction <= 1.0);
}

extents input_extents(const problem& p) { return {p.batch, p.in_channels, p.height * p.width}; }
extents output_extents(const problem& p) {
    return {p.batch, p.out_channels, p.out_height() * p.out_width()};
}
extents filter_extents(const problem& p) {
    return {p.out_channels, p.group_in_channels(), p.kernel.height * p.kernel.width};
}

// Which slice is scaled, and by what: ratio on even (or first) slices.
enum class scaled_slice { first_sample, even_channels, even_filters, even_filter_inputs };

std::function<double(std::int64_t, std::int64_t)> factor_of(scaled_slice s, double ratio) {
    switch (s) {
        case scaled_slice::first_sample: return [=](std::int64_t i, std::int64_t) { return i == 0 ? ratio : 1.0; };
        case scaled_slice::even_channels: return [=](std::int64_t, std::int64_t j) { return j % 2 == 0 ? ratio : 1.0; };
        case scaled_slice::even_filters: return [=](std::int64_t i, std::int64_t) { return i % 2 == 0 ? ratio : 1.0; };
        case scaled_slice::even_filter_inputs:
            return [=](std::int64_t, std::int64_t j) { return j % 2 == 0 ? ratio : 1.0; };
    }
    return [](std::int64_t, std::int64_t) { return 1.0; };
}

constexpr double ratios[] = {1e-6, 1e6};

// The forward operator (with bias) with x's or w's slices scaled; every
// sample and every output channel of y judged alone.
void forward_independence(context& ctx, const problem& p, bool scale_filter, scaled_slice which,
                          std::uint64_t seed) {
    for (const input_kind kind : reference::input_kinds)
        for (const double ratio : ratios) {
            auto [x, w, y] = testing::make_conv_tensors(p, seed, kind, ctx.stream());
            auto bias = reference::make_device_array<float>(p.out_channels);
            reference::fill_input(kind, bias.data(), bias.size, seed ^ 0xb1a5ull, ctx.stream());
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
            if (scale_filter) scale_slices(w.data(), filter_extents(p), factor_of(which, ratio));
            else scale_slices(x.data(), input_extents(p), factor_of(which, ratio));
            // The bias of a scaled output channel (or sample) scaled alike,
            // so that it does not swamp the slice it is added to.
            if (scale_filter) scale_slices(bias.data(), {p.out_channels, 1, 1}, factor_of(which, ratio));
            else scale_slices(bias.data(), {p.out_channels, 1, 1}, [&](auto, auto) { return std::min(ratio, 1.0); });
            ctx.conv2d(p, x.data(), w.data(), bias.data(), y.data());
            auto exact = reference::make_device_array<double>(p.output_elements());
            reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream(), bias.data());
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
            // y[b][o] scales with sample b's factor, or with filter o's.
            const slice_factor scaled_by = scale_filter ? slice_factor([&](std::int64_t, std::int64_t o) {
                return factor_of(which, ratio)(o, 0);
            })
                                                        : factor_of(which, ratio);
            const slice_result r = worst_slice(reference::to_host(y.data(), y.size),
                                               reference::to_host(exact.data(), exact.size), output_extents(p),
                                               reference::max_relative_l2, scaled_by);
            check_slices(r, reference::max_relative_l2,
                         to_string(p) + " " + reference::to_string(kind) + " ratio=" + std::to_string(ratio) +
                             " tile_extent=" + std::to_string(ctx.plan(p).geometry.tile_extent()) +
                             (scale_filter ? " (filters scaled)" : " (inputs scaled)"));
        }
}

// Both gradients and the bias gradient with one operand's slices scaled
// (x_against_dy: x's by the factor, dy's by its inverse, so that each
// sample's share of dw keeps its size while x and dy swap which sample is
// large).
enum class gradient_operand { x, w, dy, x_against_dy };

void gradient_independence(context& ctx, const problem& p, gradient_operand scaled, scaled_slice which,
                           std::uint64_t seed) {
    for (const input_kind kind : reference::input_kinds)
        for (const double ratio : ratios) {
            auto x = reference::make_device_array<float>(p.input_elements());
            auto w = reference::make_device_array<float>(p.filter_elements());
            auto dy = reference::make_device_array<float>(p.output_elements());
            reference::fill_input(kind, x.data(), x.size, seed, ctx.stream());
            reference::fill_input(kind, w.data(), w.size, seed ^ 0x5deece66dull, ctx.stream());
            reference::fill_input(kind, dy.data(), dy.size, seed ^ 0xd1ull, ctx.stream());
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
            switch (scaled) {
                case gradient_operand::x: scale_slices(x.data(), input_extents(p), factor_of(which, ratio)); break;
                case gradient_operand::w: scale_slices(w.data(), filter_extents(p), factor_of(which, ratio)); break;
                case gradient_operand::dy: scale_slices(dy.data(), output_extents(p), factor_of(which, ratio)); break;
                case gradient_operand::x_against_dy:
                    scale_slices(x.data(), input_extents(p), factor_of(which, ratio));
                    scale_slices(dy.data(), output_extents(p), factor_of(which, 1.0 / ratio));
                    break;
            }
            auto dx = reference::make_device_array<float>(p.input_elements());
            auto dw = reference::make_device_array<float>(p.filter_elements());
            auto db = reference::make_device_array<float>(p.out_channels);
            reference::fill_nan(dx.data(), dx.size, ctx.stream());
            reference::fill_nan(dw.data(), dw.size, ctx.stream());
            reference::fill_nan(db.data(), db.size, ctx.stream());
            ctx.conv2d_backward_data(p, dy.data(), w.data(), dx.data());
            ctx.conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), db.data());
            auto exact_dx = reference::make_device_array<double>(p.input_elements());
            auto exact_dw = reference::make_device_array<double>(p.filter_elements());
            auto exact_db = reference::make_device_array<double>(p.out_channels);
            reference::data_gradient_gpu(p, dy.data(), w.data(), exact_dx.data(), ctx.stream());
            reference::filter_gradient_gpu(p, x.data(), dy.data(), exact_dw.data(), exact_db.data(), ctx.stream());
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
            const char* operand = scaled == gradient_operand::x    ? "x"
                                  : scaled == gradient_operand::w    ? "w"
                                  : scaled == gradient_operand::dy   ? "dy"
                                                                     : "x against dy";
            const std::string what = to_string(p) + " " + reference::to_string(kind) +
                                     " ratio=" + std::to_string(ratio) + " operand " + operand;
            // How each result's slices scale (dx[b][c], dw[o][c], dbias[o]):
            // with the scaled slice's index where the result keeps it apart,
            // else with the largest factor of the slices it sums.
            const bool against = scaled == gradient_operand::x_against_dy;
            const double dy_ratio = against ? 1.0 / ratio : ratio;  // what dy's scaled slices were scaled by
            const double summed = std::max(ratio, 1.0), dy_summed = std::max(dy_ratio, 1.0);
            const auto f = factor_of(which, ratio), f_dy = factor_of(which, dy_ratio);
            const bool by_sample = which == scaled_slice::first_sample;
            const slice_factor dx_factor = [&](std::int64_t b, std::int64_t c) {
                if (scaled == gradient_operand::w) return f(0, c);   // w's input channel c feeds dx[:, c]
                return by_sample ? f_dy(b, 0) : dy_summed;           // dy: its sample, or all its channels summed
            };
            const slice_factor dw_factor = [&](std::int64_t o, std::int64_t c) {
                if (against) return 1.0;                                       // every sample's share unchanged
                if (by_sample) return summed;                                  // every sample summed
                return scaled == gradient_operand::x ? f(0, c) : f(0, o);     // x's channel c, dy's channel o
            };
            const slice_factor db_factor = [&](std::int64_t o, std::int64_t) {
                if (scaled == gradient_operand::x) return 1.0;
                return by_sample ? dy_summed : f(0, o);
            };
            // dx depends on dy and w only; dw and dbias on x and dy only.
            if (scaled != gradient_operand::x && !against)
                check_slices(worst_slice(reference::to_host(dx.data(), dx.size),
                                         reference::to_host(exact_dx.data(), exact_dx.size), input_extents(p),
                                         reference::max_relative_l2, dx_factor),
                             reference::max_relative_l2, "dx of " + what);
            if (scaled != gradient_operand::w) {
                check_slices(worst_slice(reference::to_host(dw.data(), dw.size),
                                         reference::to_host(exact_dw.data(), exact_dw.size), filter_extents(p),
                                         reference::max_filter_gradient_l2, dw_factor),
                             reference::max_filter_gradient_l2, "dw of " + what);
                check_slices(worst_slice(reference::to_host(db.data(), db.size),
                                         reference::to_host(exact_db.data(), exact_db.size), {p.out_channels, 1, 1},
                                         reference::max_filter_gradient_l2, db_factor),
                             reference::max_filter_gradient_l2, "dbias of " + what);
            }
        }
}

problem depthwise(std::int64_t batch, std::int64_t channels, std::int64_t size, std::int64_t k) {
    return problem{.batch = batch, .in_channels = channels, .out_channels = channels, .height = size,
                   .width = size, .kernel = k, .padding = (k - 1) / 2, .groups = channels};
}

}  // namespace

TEST_CASE("fused dense path: each output channel and each sample alone") {
    for (const int t : {32, 64}) {
        context ctx;
        ctx.force_tile_extent(t);
        const problem p{.batch = 2, .in_channels = 8, .out_channels = 8, .height = 70, .width = 61, .kernel = 9};
        CAPTURE(t);
        forward_independence(ctx, p, true, scaled_slice::even_filters, 11);
        forward_independence(ctx, p, false, scaled_slice::first_sample, 12);
    }
    // The default route (a compiled configuration where one matches).
    context ctx;
    const problem p{.batch = 2, .in_channels = 64, .out_channels = 64, .height = 64, .width = 64, .kernel = 16};
    forward_independence(ctx, p, true, scaled_slice::even_filters, 13);
}

TEST_CASE("fused depthwise paths (power-of-two and radix-3 tiles): each sample alone") {
    // The reported case: 56^2 K31 'same' C128 on its compiled 96-point
    // configuration, one tile an image, so a pair is two samples.
    context ctx;
    const problem reported = depthwise(2, 128, 56, 31);
    REQUIRE(ctx.plan(reported).path == path_kind::compiled);
    REQUIRE(ctx.plan(reported).geometry.tile_extent() == 96);
    forward_independence(ctx, reported, false, scaled_slice::first_sample, 21);
    // The generic radix-3 kernels: 96 and 48 points (small problems would
    // otherwise take the direct path).
    for (const int t : {96, 48}) {
        context forced;
        forced.force_tile_extent(t);
        CAPTURE(t);
        forward_independence(forced, depthwise(3, 4, 28, 29), false, scaled_slice::first_sample, 22);
        forward_independence(forced, depthwise(2, 4, 28, 29), true, scaled_slice::even_filters, 23);
    }
    for (const int t : {16, 32, 64}) {
        context forced;
        forced.force_tile_extent(t);
        CAPTURE(t);
        forward_independence(forced, depthwise(3, 4, 13, 5), false, scaled_slice::first_sample, 24);
        forward_independence(forced, depthwise(2, 6, 40, 9), true, scaled_slice::even_filters, 25);
    }
}

TEST_CASE("cuFFT and direct paths: each sample and channel alone") {
    context cufft;
    cufft.force_tile_extent(128);
    const problem dense{.batch = 2, .in_channels = 4, .out_channels = 4, .height = 90, .width = 90, .kernel = 40};
    forward_independence(cufft, dense, true, scaled_slice::even_filters, 31);
    forward_independence(cufft, dense, false, scaled_slice::first_sample, 32);
    context ctx;
    const problem small = depthwise(4, 16, 7, 13);
    REQUIRE(ctx.plan(small).path == path_kind::direct);
    forward_independence(ctx, small, false, scaled_slice::first_sample, 33);
    const problem small_dense{.batch = 3, .in_channels = 8, .out_channels = 6, .height = 24, .width = 40, .kernel = 5,
                              .padding = 2};
    REQUIRE(ctx.plan(small_dense).path == path_kind::direct);
    forward_independence(ctx, small_dense, false, scaled_slice::first_sample, 34);
    forward_independence(ctx, small_dense, true, scaled_slice::even_filters, 35);
}

TEST_CASE("gradients: each sample and channel of dx, each channel of dw and dbias alone") {
    const problem dense{.batch = 2, .in_channels = 8, .out_channels = 6, .height = 40, .width = 40, .kernel = 9};
    // The filter gradient on its 32-point grid (kernels up to 8), whose
    // transform pairs are two positions of one channel: 9 positions a
    // sample, so one pair in each two samples spans them.
    const problem dense32{.batch = 2, .in_channels = 8, .out_channels = 6, .height = 62, .width = 62, .kernel = 5};
    const problem dw = depthwise(2, 128, 56, 31);  // dx on the compiled 96-point configuration
    using enum gradient_operand;
    using enum scaled_slice;
    struct gradient_case {
        const problem& p;
        gradient_operand operand;
        scaled_slice slice;
    };
    const gradient_case cases[] = {
        {dense, x, even_channels},          {dense, x, first_sample},         {dense, dy, first_sample},
        {dense, dy, even_channels},         {dense, w, even_filter_inputs},   {dense, x_against_dy, first_sample},
        {dense32, x, even_channels},        {dense32, dy, even_channels},     {dense32, x, first_sample},
        {dense32, x_against_dy, first_sample}, {dw, x, first_sample},         {dw, dy, first_sample},
        {dw, dy, even_channels},
    };
    context ctx;
    std::uint64_t seed = 41;
    for (const gradient_case& c : cases) gradient_independence(ctx, c.p, c.operand, c.slice, seed++);
}

TEST_CASE("a finite input whose transform would overflow leaves its pair partner finite and exact") {
    // Sample 0 at 3e36 times uniform [0, 1) (finite: its tile's sum, about
    // 1.4e40, is not), the filter random-normal (the exact outputs, about
    // 5e37, fit a float). Depthwise 56^2 K31 C128 on its compiled T = 96
    // entry: one tile an image, so a pair is samples 0 and 1 (balanced
    // pairs). 120^2 K31 on 96 points and 60^2 K15 on 64: four tiles an image,
    // so a pair is two tiles of one image (unbalanced pairs, which run
    // balanced when a value could overflow).
    struct overflow_case {
        problem p;
        int forced_tile;  // 0: the default route
    };
    for (const auto& [p, forced_tile] : {overflow_case{depthwise(2, 128, 56, 31), 0},
                                         overflow_case{depthwise(2, 4, 120, 31), 96},
                                         overflow_case{depthwise(2, 4, 60, 15), 64}}) {
        CAPTURE(to_string(p));
        context ctx;
        if (forced_tile > 0) ctx.force_tile_extent(forced_tile);
        REQUIRE(ctx.plan(p).geometry.tile_extent() == (forced_tile > 0 ? forced_tile : 96));
        auto [x, w, y] = testing::make_conv_tensors(p, 51, input_kind::normal, ctx.stream());
        reference::fill_input(input_kind::uniform, x.data(), x.size, 52, ctx.stream());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
        scale_slices(x.data(), input_extents(p), factor_of(scaled_slice::first_sample, 3e36));
        ctx.conv2d(p, x.data(), w.data(), y.data());
        auto exact = reference::make_device_array<double>(p.output_elements());
        reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
        const std::vector<float> got = reference::to_host(y.data(), y.size);
        const std::vector<double> want = reference::to_host(exact.data(), exact.size);
        const std::int64_t per_sample = p.output_elements() / p.batch;
        // Sample 1 as if alone.
        const accuracy second = reference::compare(std::vector<float>(got.begin() + per_sample, got.end()),
                                                   std::vector<double>(want.begin() + per_sample, want.end()));
        CHECK(second.non_finite == 0);
        CHECK(second.relative_l2 <= reference::max_relative_l2);
        // Sample 0: finite wherever the exact value fits a float, and as accurate.
        std::int64_t lost = 0;
        for (std::int64_t i = 0; i < per_sample; ++i)
            if (std::abs(want[i]) < 0.5 * double(std::numeric_limits<float>::max()) && !std::isfinite(got[i])) ++lost;
        CHECK(lost == 0);
        if (lost == 0) {
            const accuracy first = reference::compare(std::vector<float>(got.begin(), got.begin() + per_sample),
                                                      std::vector<double>(want.begin(), want.begin() + per_sample));
            CHECK(first.relative_l2 <= reference::max_relative_l2);
        }
    }
}
