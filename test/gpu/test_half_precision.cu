// bfloat16 and float16 activations (fftconv/element_type.hpp) on every
// route: fused dense tiles (T = 16, 32, 64), cuFFT tiles, fused depthwise
// tiles (T = 16, 32, 48, 64, 96; tile pairs within an image and across
// samples), the direct depthwise path's planes and narrow kernels, compiled
// configurations, outputs that see only padding, a filter spectrum, and the
// data gradient (its crop path too). Each case runs the float call on the
// widened inputs and the half call on the same context, and holds the half
// output to two bars:
//   (a) bit for bit the float call's output rounded to nearest even, every
//       element (the kernels compute exactly as the float path and round once);
//   (b) against the float64 oracle on the widened inputs: relative L2 of
//       every sample and every channel <= 2^-8 (bfloat16) or 2^-10
//       (float16), and every element within the rounding of the result,
//       u |exact| x 1.01 with u = 2^-8 (bfloat16) or 2^-11 (float16), plus
//       the float bar 1e-3 f + 1e-3 |exact| (f: the sample's scale, below).
// Inputs random-normal and positive uniform [0, 1), sample b scaled by
// 10^(b mod 3 - 1) and channel c by 1, 1/2 or 2 (c mod 3), then rounded to
// the element type: the widened values are what the float call and the
// oracle get. Filters and biases stay float.
#include "doctest.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backward/gradient_operands.hpp"
#include "conv_check.hpp"
#include "direct/direct_depthwise.hpp"
#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/dispatch.hpp"
#include "fftconv/element_type.hpp"
#include "make_problem.hpp"

using namespace fftconv;
using reference::input_kind;
using testing::make;

namespace {

// What a type's results are held to.
template <class E>
struct precision;
template <>
struct precision<__nv_bfloat16> {
    static constexpr int mantissa_bits = 7;           // stored; 8 significant
    static constexpr double l2_bar = 1.0 / 256;       // 2^-8
};
template <>
struct precision<__half> {
    static constexpr int mantissa_bits = 10;          // stored; 11 significant
    static constexpr double l2_bar = 1.0 / 1024;      // 2^-10
};
// The largest relative error of one rounding to nearest: half a unit in the
// last place of the smallest value of a binade.
template <class E>
constexpr double unit_roundoff = 1.0 / double(std::int64_t{2} << precision<E>::mantissa_bits);

// The scales of a tensor's slices: sample b by 10^(b mod 3 - 1), channel c by
// 1, 1/2 or 2. The largest channel factor bounds a sample's magnitude.
__host__ __device__ constexpr float sample_factor(std::int64_t b) {
    return b % 3 == 0 ? 0.1f : b % 3 == 1 ? 1.0f : 10.0f;
}
__host__ __device__ constexpr float channel_factor(std::int64_t c) {
    return c % 3 == 0 ? 1.0f : c % 3 == 1 ? 0.5f : 2.0f;
}
constexpr double largest_channel_factor = 2.0;

constexpr unsigned blocks = 1024, threads = 256;

using detail::from_float;
using detail::to_float;

// x[b][c][rest] scaled by its sample's and channel's factors and rounded to E:
// `rounded` gets the E values, x their widened (exact) float values.
template <class E>
__global__ void scale_and_round(float* x, E* rounded, std::int64_t n, std::int64_t channels, std::int64_t plane) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
         i += std::int64_t{gridDim.x} * blockDim.x) {
        const std::int64_t c = i / plane % channels, b = i / plane / channels;
        const E r = from_float<E>(x[i] * sample_factor(b) * channel_factor(c));
        rounded[i] = r;
        x[i] = to_float(r);
    }
}

template <class E>
__global__ void round_all(const float* in, E* out, std::int64_t n) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
         i += std::int64_t{gridDim.x} * blockDim.x)
        out[i] = from_float<E>(in[i]);
}

template <class E>
__global__ void widen_all(const E* in, float* out, std::int64_t n) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
         i += std::int64_t{gridDim.x} * blockDim.x)
        out[i] = to_float(in[i]);
}

template <class E>
std::vector<std::uint16_t> bits_to_host(const E* device, std::int64_t n) {
    static_assert(sizeof(E) == sizeof(std::uint16_t));
    std::vector<std::uint16_t> host(static_cast<std::size_t>(n));
    FFTCONV_CUDA_TRY(cudaMemcpy(host.data(), device, sizeof(E) * std::size_t(n), cudaMemcpyDeviceToHost));
    return host;
}

template <class E>
const char* name_of() {
    return to_string(element_type_of<E>);
}

// A tensor's extents [d0][d1][rest]: samples, channels, the plane.
struct extents {
    std::int64_t d0, d1, rest;
};

// The worst slice along each axis and the worst element, against the bars of (b).
struct half_accuracy {
    double worst_sample_l2 = 0, worst_channel_l2 = 0, worst_fraction = 0;
    std::int64_t worst_sample = -1, worst_channel = -1, worst_index = -1, non_finite = 0;
};

double relative_l2(double error_sq, double exact_sq) {
    return exact_sq > 0 ? std::sqrt(error_sq / exact_sq) : (error_sq > 0 ? HUGE_VAL : 0.0);
}

template <class E>
half_accuracy judge(const std::vector<float>& got, const std::vector<double>& exact, extents e) {
    half_accuracy a;
    std::vector<double> sample_error(std::size_t(e.d0)), sample_exact(std::size_t(e.d0));
    std::vector<double> channel_error(std::size_t(e.d1)), channel_exact(std::size_t(e.d1));
    for (std::int64_t b = 0; b < e.d0; ++b)
        for (std::int64_t c = 0; c < e.d1; ++c) {
            // The float bar's absolute term is for unit-scale data: a sample
            // at scale f is held to f times it.
            const double f = double(sample_factor(b)) * largest_channel_factor;
            for (std::int64_t k = 0; k < e.rest; ++k) {
                const std::size_t i = std::size_t((b * e.d1 + c) * e.rest + k);
                if (!std::isfinite(got[i])) {
                    ++a.non_finite;
                    continue;
                }
                const double diff = double(got[i]) - exact[i], magnitude = std::abs(exact[i]);
                sample_error[std::size_t(b)] += diff * diff;
                sample_exact[std::size_t(b)] += exact[i] * exact[i];
                channel_error[std::size_t(c)] += diff * diff;
                channel_exact[std::size_t(c)] += exact[i] * exact[i];
                const double bound = unit_roundoff<E> * magnitude * 1.01 +
                                     (reference::absolute_tolerance * f + reference::relative_tolerance * magnitude);
                const double fraction = std::abs(diff) / bound;
                if (fraction > a.worst_fraction) {
                    a.worst_fraction = fraction;
                    a.worst_index = std::int64_t(i);
                }
            }
        }
    for (std::int64_t b = 0; b < e.d0; ++b) {
        const double l2 = relative_l2(sample_error[std::size_t(b)], sample_exact[std::size_t(b)]);
        if (l2 >= a.worst_sample_l2) {
            a.worst_sample_l2 = l2;
            a.worst_sample = b;
        }
    }
    for (std::int64_t c = 0; c < e.d1; ++c) {
        const double l2 = relative_l2(channel_error[std::size_t(c)], channel_exact[std::size_t(c)]);
        if (l2 >= a.worst_channel_l2) {
            a.worst_channel_l2 = l2;
            a.worst_channel = c;
        }
    }
    return a;
}

// Whether output (i, j) of `p` sees only padding: no tap of its window
// lands in the image.
bool sees_only_padding(const problem& p, std::int64_t i, std::int64_t j) {
    const bool rows = i + p.kernel.height - 1 < p.padding.height || i >= p.padding.height + p.height;
    const bool cols = j + p.kernel.width - 1 < p.padding.width || j >= p.padding.width + p.width;
    return rows || cols;
}

float rounded_on_host(__nv_bfloat16, float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
float rounded_on_host(__half, float v) { return __half2float(__float2half_rn(v)); }

// What a case computes.
enum class operation {
    forward,        // ctx.conv2d(p, x, w, bias, y)
    spectrum,       // ctx.conv2d(p, x, transform_filter(p, w), bias, y)
    data_gradient,  // ctx.conv2d_backward_data(p, dy, w, dx)
};

const char* to_string(operation o) {
    return o == operation::forward ? "conv2d" : o == operation::spectrum ? "conv2d (filter spectrum)"
                                                                         : "conv2d_backward_data";
}

// One run of `op` on `p` with E activations and the float call beside it,
// both bars checked. Returns the accuracy for a summary line.
template <class E>
half_accuracy check_half(context& ctx, const problem& p, operation op, bool with_bias, input_kind kind,
                         std::uint64_t seed) {
    using namespace reference;
    const bool backward = op == operation::data_gradient;
    const extents in_extents = backward ? extents{p.batch, p.out_channels, p.out_height() * p.out_width()}
                                        : extents{p.batch, p.in_channels, p.height * p.width};
    const extents out_extents = backward ? extents{p.batch, p.in_channels, p.height * p.width}
                                         : extents{p.batch, p.out_channels, p.out_height() * p.out_width()};
    const std::int64_t in_n = in_extents.d0 * in_extents.d1 * in_extents.rest;
    const std::int64_t out_n = out_extents.d0 * out_extents.d1 * out_extents.rest;
    const cudaStream_t s = ctx.stream();

    auto x = make_device_array<float>(in_n);  // x (dy): drawn, then the widened E values
    auto w = make_device_array<float>(p.filter_elements());
    auto bias = make_device_array<float>(p.out_channels);
    fill_input(kind, x.data(), x.size, seed, s);
    fill_input(kind, w.data(), w.size, seed ^ 0x5deece66dull, s);
    fill_input(kind, bias.data(), bias.size, seed ^ 0xb1a5ull, s);
    const float* b = with_bias && !backward ? bias.data() : nullptr;
    auto x_half = make_device_array<E>(in_n);
    scale_and_round<E><<<blocks, threads, 0, s>>>(x.data(), x_half.data(), in_n, in_extents.d1, in_extents.rest);
    FFTCONV_CHECK_LAUNCH();

    auto y = make_device_array<float>(out_n);
    auto y_half = make_device_array<E>(out_n);
    fill_nan(y.data(), y.size, s);
    FFTCONV_CUDA_TRY(cudaMemsetAsync(y_half.data(), 0xff, sizeof(E) * std::size_t(out_n), s));  // NaN in both types
    switch (op) {
        case operation::forward:
            ctx.conv2d(p, x.data(), w.data(), b, y.data());
            ctx.conv2d(p, x_half.data(), w.data(), b, y_half.data());
            break;
        case operation::spectrum: {
            const filter_spectrum spectrum = ctx.transform_filter(p, w.data());
            ctx.conv2d(p, x.data(), spectrum, b, y.data());
            ctx.conv2d(p, x_half.data(), spectrum, b, y_half.data());
            FFTCONV_CUDA_TRY(cudaStreamSynchronize(s));  // before the spectrum goes
            break;
        }
        case operation::data_gradient:
            ctx.conv2d_backward_data(p, x.data(), w.data(), y.data());
            ctx.conv2d_backward_data(p, x_half.data(), w.data(), y_half.data());
            break;
    }
    auto exact = make_device_array<double>(out_n);
    if (backward) data_gradient_gpu(p, x.data(), w.data(), exact.data(), s);
    else direct_conv_gpu(p, x.data(), w.data(), exact.data(), s, b);
    auto float_rounded = make_device_array<E>(out_n);
    auto widened = make_device_array<float>(out_n);
    round_all<E><<<blocks, threads, 0, s>>>(y.data(), float_rounded.data(), out_n);
    FFTCONV_CHECK_LAUNCH();
    widen_all<E><<<blocks, threads, 0, s>>>(y_half.data(), widened.data(), out_n);
    FFTCONV_CHECK_LAUNCH();
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(s));

    const std::vector<std::uint16_t> got_bits = bits_to_host(y_half.data(), out_n);
    const std::vector<std::uint16_t> want_bits = bits_to_host(float_rounded.data(), out_n);
    const std::vector<float> got = to_host(widened.data(), out_n);
    const std::vector<float> float_result = to_host(y.data(), out_n);
    const std::vector<double> want = to_host(exact.data(), out_n);

    const dispatch_decision d = ctx.plan(backward ? detail::data_gradient_problem(p) : p);
    INFO(name_of<E>(), " ", to_string(op), " of ", to_string(p), " bias=", b != nullptr, " ",
         std::string(reference::to_string(kind)), " seed=", seed, " path=", fftconv::to_string(d.path),
         " tile_extent=", d.geometry.tile_extent());

    // (a) Bit for bit the float call's output, rounded.
    std::int64_t differing = 0, first = -1;
    for (std::size_t i = 0; i < got_bits.size(); ++i)
        if (got_bits[i] != want_bits[i]) {
            if (first < 0) first = std::int64_t(i);
            ++differing;
        }
    if (differing > 0) {
        const auto i = std::size_t(first);
        INFO(differing, " of ", out_n, " elements differ from the rounded float output; first at ", first,
             ": half ", got[i], " (bits 0x", std::hex, got_bits[i], "), float ", float_result[i], " rounded (bits 0x",
             want_bits[i], std::dec, "), exact ", want[i]);
        CHECK(differing == 0);
    }

    // (b) Against float64, every sample, every channel and every element.
    const half_accuracy a = judge<E>(got, want, out_extents);
    {
        const auto i = std::size_t(std::max<std::int64_t>(a.worst_index, 0));
        INFO("worst sample ", a.worst_sample, " rel_l2=", a.worst_sample_l2, "; worst channel ", a.worst_channel,
             " rel_l2=", a.worst_channel_l2, "; worst element ", a.worst_index, ": ", got[i], " vs ", want[i], " (",
             a.worst_fraction, " of its bound); non-finite ", a.non_finite);
        CHECK(a.non_finite == 0);
        CHECK(a.worst_sample_l2 <= precision<E>::l2_bar);
        CHECK(a.worst_channel_l2 <= precision<E>::l2_bar);
        CHECK(a.worst_fraction <= 1.0);
    }

    // Outputs that see only padding are the bias, rounded once: exactly.
    if (!backward) {
        std::int64_t wrong = 0, seen = 0;
        const std::int64_t ho = p.out_height(), wo = p.out_width();
        for (std::int64_t n = 0; n < p.batch * p.out_channels; ++n)
            for (std::int64_t i = 0; i < ho; ++i)
                for (std::int64_t j = 0; j < wo; ++j) {
                    if (!sees_only_padding(p, i, j)) continue;
                    ++seen;
                    const std::size_t k = std::size_t((n * ho + i) * wo + j);
                    if (got[k] != rounded_on_host(E{}, float(want[k]))) ++wrong;  // want: the bias (or 0), exactly
                }
        INFO(wrong, " of ", seen, " outputs that see only padding are not the rounded bias");
        CHECK(wrong == 0);
    }
    return a;
}

// Both input distributions.
template <class E>
void check_both_kinds(context& ctx, const problem& p, operation op, bool with_bias, std::uint64_t& seed) {
    for (const input_kind kind : reference::input_kinds) (void)check_half<E>(ctx, p, op, with_bias, kind, seed += 2);
}

// The route `ctx` gives `p`: `path`, and tile extent `tile` unless 0.
void require_route(const context& ctx, const problem& p, path_kind path, int tile) {
    const dispatch_decision d = ctx.plan(p);
    const std::string planned = to_string(d.path);
    INFO(to_string(p), ": planned ", planned, " T=", d.geometry.tile_extent());
    REQUIRE(d.path == path);
    if (tile > 0) REQUIRE(d.geometry.tile_extent() == tile);
}

// One row of a table: a problem on a forced tile extent (0: the dispatch's
// own choice), with or without a bias.
struct forced_case {
    problem p;
    int tile;
    bool bias;
};

}  // namespace

TEST_CASE_TEMPLATE("half precision: fused dense tiles (16, 32, 64) and cuFFT tiles", E, __nv_bfloat16, __half) {
    context ctx;
    std::uint64_t seed = 9000;
    for (const int tile : {16, 32, 64, 20, 40, 48}) {  // 20, 40: cuFFT; 48: cuFFT for dense (radix-3 is depthwise only)
        CAPTURE(tile);
        ctx.force_tile_extent(tile);
        REQUIRE(has_fused_fft(tile) == (tile == 16 || tile == 32 || tile == 64));
        for (const forced_case& c : {
                 forced_case{make(3, 8, 6, 37, 29, 7, same_padding(7), 1), tile, true},   // 'same', odd sizes, Cin != Cout
                 forced_case{make(2, 6, 10, 20, 33, {3, 5}, {1, 2}, 2), tile, false},      // rectangular, groups 2
                 forced_case{make(3, 4, 6, 12, 14, 3, {5, 4}, 1), tile, true},            // outputs that see only padding
                 forced_case{make(4, 3, 5, 16, 9, 1, 0, 1), tile, false},                 // 1 x 1, batch 4
             }) {
            CAPTURE(to_string(c.p));
            require_route(ctx, c.p, path_kind::generic, tile);
            check_both_kinds<E>(ctx, c.p, operation::forward, c.bias, seed);
        }
    }
    // The dispatch's own choice, and padding beyond the kernel beside many
    // large positive sums (the random sweep's case: 235 channels, K 63 x 1).
    ctx.force_tile_extent(0);
    for (const problem& p : {make(2, 12, 12, 45, 50, 9, same_padding(9), 1), make(1, 235, 16, 67, 59, {63, 1}, {0, 2}, 1)})
        check_both_kinds<E>(ctx, p, operation::forward, true, seed);
    ctx.force_tile_extent(64);
    check_both_kinds<E>(ctx, make(1, 235, 16, 67, 59, {63, 1}, {0, 2}, 1), operation::forward, true, seed);
}

TEST_CASE_TEMPLATE("half precision: fused depthwise tiles (16, 32, 48, 64, 96) and cuFFT depthwise", E, __nv_bfloat16,
                   __half) {
    context ctx;
    std::uint64_t seed = 9100;
    for (const int tile : {16, 32, 48, 64, 96, 20, 40}) {
        CAPTURE(tile);
        ctx.force_tile_extent(tile);
        REQUIRE(has_fused_depthwise(tile) == (tile != 20 && tile != 40));
        const std::int64_t k = tile / 4 + 1;  // 5, 9, 13, 17, 25 (cuFFT: 6, 11)
        for (const forced_case& c : {
                 // One tile covers each padded plane; 15 planes: pairs span channels and samples, the last alone.
                 forced_case{make(3, 5, 5, tile / 2, tile / 2 - 1, k, same_padding(k), 5), tile, true},
                 // Three tiles an image (overlap-save, edge tiles clipped): pairs span samples; multiplier 2.
                 forced_case{make(3, 4, 8, 2 * (tile - k + 1) + 3, tile - k - 1, k, same_padding(k), 4), tile, false},
                 // Rectangular kernel, padding beyond it: outputs that see only padding, with a bias.
                 forced_case{make(2, 3, 3, 11, 9, {5, 3}, {7, 6}, 3), tile, true},
                 // Several tiles both ways, odd sizes.
                 forced_case{make(2, 6, 6, 70, 45, 7, same_padding(7), 6), tile, true},
             }) {
            CAPTURE(to_string(c.p));
            require_route(ctx, c.p, path_kind::generic, tile);
            check_both_kinds<E>(ctx, c.p, operation::forward, c.bias, seed);
        }
    }
}

TEST_CASE_TEMPLATE("half precision: the direct depthwise path, planes and narrow kernels", E, __nv_bfloat16, __half) {
    context ctx;
    std::uint64_t seed = 9200;
    struct direct_case {
        problem p;
        detail::direct_kernel kernel;
        bool bias;
    };
    using enum detail::direct_kernel;
    for (const direct_case& c : {
             direct_case{make(2, 64, 64, 7, 7, 13, same_padding(13), 64), planes, true},   // RepLKNet's 7 x 7, small batch
             direct_case{make(3, 16, 16, 9, 13, {5, 3}, {2, 1}, 16), planes, false},       // rectangular
             direct_case{make(3, 16, 32, 14, 14, 7, 3, 16), planes, true},                 // multiplier 2
             direct_case{make(2, 8, 8, 40, 40, 3, 1, 8), planes, true},                    // too wide for the narrow kernel
             direct_case{make(3, 5, 5, 40, 40, 3, 4, 5), planes, true},                    // padding beyond the kernel
             direct_case{make(16, 256, 256, 14, 14, 13, 6, 256), narrow, true},            // width 14
             direct_case{make(24, 256, 256, 12, 12, 11, 5, 256), narrow, false},           // batch 24: blocks span channels
             direct_case{make(16, 128, 256, 14, 14, 13, 6, 128), narrow, true},            // multiplier 2
             direct_case{make(32, 256, 256, 9, 9, 5, 7, 256), narrow, true},               // padding beyond the kernel
         }) {
        CAPTURE(to_string(c.p));
        require_route(ctx, c.p, path_kind::direct, 0);
        REQUIRE(detail::direct_kernel_for(c.p) == c.kernel);
        check_both_kinds<E>(ctx, c.p, operation::forward, c.bias, seed);
    }
}

TEST_CASE_TEMPLATE("half precision: the direct dense kernel", E, __nv_bfloat16, __half) {
    context ctx;
    std::uint64_t seed = 9250;
    for (const problem& p : {
             make(2, 16, 16, 32, 32, 4, 0, 1),               // leaderboard test shape
             make(3, 8, 12, 37, 29, 7, same_padding(7), 1),  // 'same', odd sizes
             make(2, 8, 12, 20, 30, {3, 5}, {1, 2}, 4),      // groups, rectangular kernel
             make(2, 6, 6, 11, 9, 5, {7, 6}, 2),             // padding beyond the kernel
         }) {
        CAPTURE(to_string(p));
        require_route(ctx, p, path_kind::direct, 0);
        check_both_kinds<E>(ctx, p, operation::forward, true, seed);
        check_both_kinds<E>(ctx, p, operation::forward, false, seed);
    }
}

TEST_CASE_TEMPLATE("half precision: compiled configurations, with padding and a bias", E, __nv_bfloat16, __half) {
    // The first dense and the first depthwise entry of the table whose sums
    // stay far inside float16's range (C K^2 products of uniform inputs at
    // scale 20).
    context ctx;
    std::uint64_t seed = 9300;
    bool dense_done = false, depthwise_done = false;
    for (const tile_config& c : compiled_configs()) {
        const std::int64_t taps = std::int64_t(c.kernel_extent) * c.kernel_extent * (c.depthwise ? 1 : c.channels);
        bool& done = c.depthwise ? depthwise_done : dense_done;
        if (done || taps > 8192) continue;
        done = true;
        const problem p = make(c.depthwise ? 3 : 1, c.channels, c.channels, c.tile_extent + 5,
                               c.tile_extent / 2 + c.kernel_extent, c.kernel_extent, same_padding(c.kernel_extent),
                               c.depthwise ? c.channels : 1);
        CAPTURE(to_string(p));
        require_route(ctx, p, path_kind::compiled, c.tile_extent);
        check_both_kinds<E>(ctx, p, operation::forward, true, seed);
        check_both_kinds<E>(ctx, p, operation::spectrum, true, seed);
    }
    if (!dense_done || !depthwise_done) MESSAGE("this build's table has no small dense or depthwise entry to run");
}

TEST_CASE_TEMPLATE("half precision: through a filter spectrum, on each kind of pipeline", E, __nv_bfloat16, __half) {
    context ctx;
    std::uint64_t seed = 9400;
    for (const forced_case& c : {
             forced_case{make(3, 8, 6, 37, 29, 7, same_padding(7), 1), 32, true},         // fused dense
             forced_case{make(3, 8, 6, 37, 29, 7, same_padding(7), 1), 20, true},         // cuFFT dense
             forced_case{make(3, 5, 5, 8, 7, 5, same_padding(5), 5), 16, true},           // fused depthwise, 1 tile a plane
             forced_case{make(3, 4, 8, 56, 50, 25, same_padding(25), 4), 96, true},       // radix-3 depthwise, multiplier 2
             forced_case{make(2, 3, 3, 11, 9, {5, 3}, {7, 6}, 3), 48, true},              // padding beyond the kernel
             forced_case{make(2, 6, 6, 30, 21, 9, same_padding(9), 6), 40, false},        // cuFFT depthwise
         }) {
        CAPTURE(to_string(c.p));
        ctx.force_tile_extent(c.tile);
        require_route(ctx, c.p, path_kind::generic, c.tile);
        check_both_kinds<E>(ctx, c.p, operation::spectrum, c.bias, seed);
    }
    // A problem the dispatch sends to the direct path: its spectrum runs the FFT pipeline.
    ctx.force_tile_extent(0);
    const problem direct = make(2, 64, 64, 7, 7, 13, same_padding(13), 64);
    require_route(ctx, direct, path_kind::direct, 0);
    check_both_kinds<E>(ctx, direct, operation::spectrum, true, seed);
}

TEST_CASE_TEMPLATE("half precision: the data gradient, on every route and its crop path", E, __nv_bfloat16, __half) {
    // dx = conv2d_backward_data(dy, w): dy and dx of E. Where the padding
    // exceeds K - 1 the data gradient crops dy (gradient_operands.hpp).
    context ctx;
    std::uint64_t seed = 9500;
    struct gradient_case {
        problem p;
        int tile;          // forced on the data gradient's convolution (0: the dispatch's choice)
        path_kind path;    // the route of that convolution
    };
    using enum path_kind;
    const problem dense = make(3, 8, 6, 37, 29, 7, same_padding(7), 1);
    const problem crop_dense = make(3, 8, 8, 17, 17, 5, {9, 2}, 4);        // rows cropped, groups 4
    const problem crop_both = make(2, 4, 6, 10, 9, 3, {5, 4}, 1);          // both axes cropped
    const problem depthwise = make(3, 6, 6, 40, 37, 9, 4, 6);
    const problem crop_depthwise = make(3, 5, 5, 11, 9, {5, 3}, {7, 6}, 5);
    for (const gradient_case& c : {
             gradient_case{make(2, 4, 6, 12, 11, 3, 1, 1), 0, direct},  // the direct dense kernel
             gradient_case{dense, 16, generic},
             gradient_case{dense, 32, generic},
             gradient_case{dense, 64, generic},
             gradient_case{dense, 24, generic},  // cuFFT
             gradient_case{crop_dense, 16, generic},
             gradient_case{crop_dense, 24, generic},
             gradient_case{crop_both, 32, generic},
             gradient_case{depthwise, 16, generic},
             gradient_case{depthwise, 48, generic},
             gradient_case{depthwise, 96, generic},
             gradient_case{depthwise, 40, generic},  // cuFFT
             gradient_case{crop_depthwise, 16, generic},
             gradient_case{crop_depthwise, 64, generic},
             gradient_case{make(2, 16, 16, 64, 64, 31, 15, 16), 0, generic},   // RepLKNet-like 31 x 31
             gradient_case{make(3, 16, 16, 9, 13, {5, 3}, {2, 1}, 16), 0, direct},
             gradient_case{make(16, 256, 256, 14, 14, 13, 6, 256), 0, direct},  // the narrow kernel
             gradient_case{crop_depthwise, 0, direct},
         }) {
        CAPTURE(to_string(c.p));
        CAPTURE(c.tile);
        ctx.force_tile_extent(c.tile);
        const problem q = detail::data_gradient_problem(c.p);
        require_route(ctx, q, c.path, c.tile);
        check_both_kinds<E>(ctx, c.p, operation::data_gradient, false, seed);
    }
}

namespace {

template <class F>
void expect_invalid(F&& call, const std::string& message) {
    try {
        call();
        FAIL("accepted, expected: " << message);
    } catch (const error& e) {
        CHECK(e.code() == status::invalid_argument);
        CHECK_MESSAGE(std::string(e.what()).find(message) != std::string::npos, e.what());
    }
}

}  // namespace

TEST_CASE_TEMPLATE("half precision: null, overlapping and short activations are refused, sized in 2-byte elements",
                   E, __nv_bfloat16, __half) {
    context ctx;
    const problem p = make(1, 3, 3, 20, 20, 3, 1, 1);  // x and y of 1200 elements each
    auto x = reference::make_device_array<E>(p.input_elements());
    auto y = reference::make_device_array<E>(p.output_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    reference::fill_normal(w.data(), w.size, 1, nullptr);
    FFTCONV_CUDA_TRY(cudaMemset(x.data(), 0, sizeof(E) * std::size_t(x.size)));
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());
    E* const no_y = nullptr;
    const E* const no_x = nullptr;
    expect_invalid([&] { ctx.conv2d(p, x.data(), w.data(), no_y); }, "y is a null pointer");
    expect_invalid([&] { ctx.conv2d(p, no_x, w.data(), y.data()); }, "x is a null pointer");
    expect_invalid([&] { ctx.conv2d_backward_data(p, no_x, w.data(), x.data()); }, "dy is a null pointer");
    expect_invalid([&] { ctx.conv2d_backward_data(p, y.data(), w.data(), no_y); }, "dx is a null pointer");

    // x and y inside one allocation: y 7 elements into x overlaps it (the
    // message counts 2-byte elements); y just past x's last element does not.
    auto both = reference::make_device_array<E>(2 * p.input_elements());
    FFTCONV_CUDA_TRY(cudaMemset(both.data(), 0, sizeof(E) * std::size_t(both.size)));
    const std::string y_bytes = std::to_string(sizeof(E) * std::size_t(p.output_elements()));
    expect_invalid([&] { ctx.conv2d(p, both.data(), w.data(), both.data() + 7); }, y_bytes + " bytes) overlaps x");
    expect_invalid([&] { ctx.conv2d(p, both.data() + 7, w.data(), both.data()); }, "overlaps x");
    expect_invalid([&] { ctx.conv2d_backward_data(p, both.data(), w.data(), both.data() + 7); }, "dx = ");
    CHECK_NOTHROW(ctx.conv2d(p, both.data(), w.data(), both.data() + p.input_elements()));

    // Exactly the problem's 2-byte elements at the end of an allocation of
    // its own (>= 2 MiB: mapped alone) are enough; one element fewer is not.
    constexpr std::int64_t big = std::int64_t{1} << 21;
    auto tail = reference::make_device_array<E>(big);
    FFTCONV_CUDA_TRY(cudaMemset(tail.data(), 0, sizeof(E) * std::size_t(big)));
    E* const exact_y = tail.data() + big - p.output_elements();
    CHECK_NOTHROW(ctx.conv2d(p, x.data(), w.data(), exact_y));
    expect_invalid([&] { ctx.conv2d(p, x.data(), w.data(), exact_y + 1); }, "is too small");
    const E* const exact_x = tail.data() + big - p.input_elements();
    CHECK_NOTHROW(ctx.conv2d(p, exact_x, w.data(), y.data()));
    expect_invalid([&] { ctx.conv2d(p, exact_x + 1, w.data(), y.data()); }, "x = ");
    FFTCONV_CUDA_TRY(cudaDeviceSynchronize());

    // And the context still computes.
    std::uint64_t seed = 9600;
    check_both_kinds<E>(ctx, p, operation::forward, true, seed);
}
