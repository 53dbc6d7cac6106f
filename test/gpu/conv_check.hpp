// test/gpu/conv_check.hpp — the one routine every GPU accuracy test runs:
// fresh inputs (random-normal and positive uniform [0, 1)), a NaN-poisoned
// output, fftconv, the float64 oracle, and the project's accuracy bar on
// every element.
#pragma once

#include "doctest.hpp"

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "fftconv/context.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "reference.hpp"

namespace fftconv::testing {

// How the output is produced: by default ctx.conv2d(p, x, w, y).
using conv_runner = std::function<void(context&, const problem&, const float*, const float*, float*)>;

inline void plain_conv(context& ctx, const problem& p, const float* x, const float* w, float* y) {
    ctx.conv2d(p, x, w, y);
}

// A problem's tensors on the device: x and w drawn from `kind` (seeds from
// `seed`), y poisoned with NaN (an unwritten output shows up as non-finite).
struct conv_tensors {
    reference::device_array<float> x, w, y;
};

inline conv_tensors make_conv_tensors(const problem& p, std::uint64_t seed,
                                      reference::input_kind kind = reference::input_kind::normal,
                                      cudaStream_t stream = nullptr) {
    using namespace reference;
    conv_tensors t{make_device_array<float>(p.input_elements()), make_device_array<float>(p.filter_elements()),
                   make_device_array<float>(p.output_elements())};
    fill_input(kind, t.x.data(), t.x.size, seed, stream);
    fill_input(kind, t.w.data(), t.w.size, seed ^ 0x5deece66dull, stream);
    fill_nan(t.y.data(), t.y.size, stream);
    return t;
}

// A non-blocking stream for the test's lifetime.
struct stream_holder {
    cudaStream_t s = nullptr;
    stream_holder() { FFTCONV_CUDA_TRY(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking)); }
    ~stream_holder() { (void)cudaStreamDestroy(s); }
    stream_holder(const stream_holder&) = delete;
    stream_holder& operator=(const stream_holder&) = delete;
};

// What `enqueue` puts on `stream`, captured (global mode: an allocation or a
// synchronization inside fails the capture) and instantiated.
class captured_graph {
public:
    template <class F>
    captured_graph(cudaStream_t stream, F&& enqueue) {
        FFTCONV_CUDA_TRY(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
        enqueue();
        FFTCONV_CUDA_TRY(cudaStreamEndCapture(stream, &graph_));
        FFTCONV_CUDA_TRY(cudaGraphInstantiate(&exec_, graph_, 0));
    }
    ~captured_graph() {
        (void)cudaGraphExecDestroy(exec_);
        (void)cudaGraphDestroy(graph_);
    }
    captured_graph(const captured_graph&) = delete;
    captured_graph& operator=(const captured_graph&) = delete;
    void launch(cudaStream_t stream) const { FFTCONV_CUDA_TRY(cudaGraphLaunch(exec_, stream)); }

private:
    cudaGraph_t graph_ = nullptr;
    cudaGraphExec_t exec_ = nullptr;
};

inline reference::accuracy worse(const reference::accuracy& a, const reference::accuracy& b) {
    reference::accuracy w = a;
    w.relative_l2 = std::max(a.relative_l2, b.relative_l2);
    w.worst_fraction = std::max(a.worst_fraction, b.worst_fraction);
    w.non_finite = std::max(a.non_finite, b.non_finite);
    return w;
}

inline void check_bar(const reference::accuracy& a) {
    CHECK(a.non_finite == 0);
    CHECK(a.relative_l2 <= reference::max_relative_l2);
    CHECK(a.worst_fraction <= 1.0);
}

// Outputs compared with the oracle: all of them, or (sample > 0) that many
// distinct random ones, for problems whose full float64 convolution would
// take minutes.
inline reference::accuracy check_conv_kind(context& ctx, const problem& p, std::uint64_t seed,
                                           reference::input_kind kind, const conv_runner& run = plain_conv,
                                           std::int64_t sample = 0) {
    using namespace reference;
    auto [x, w, y] = make_conv_tensors(p, seed, kind, ctx.stream());
    run(ctx, p, x.data(), w.data(), y.data());
    std::vector<float> got;
    std::vector<double> exact;
    if (sample <= 0 || sample >= p.output_elements()) {
        auto oracle = make_device_array<double>(p.output_elements());
        direct_conv_gpu(p, x.data(), w.data(), oracle.data(), ctx.stream());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
        got = to_host(y.data(), y.size);
        exact = to_host(oracle.data(), oracle.size);
    } else {
        std::mt19937_64 rng(seed);
        std::vector<std::int64_t> indices(static_cast<std::size_t>(sample));
        for (auto& i : indices) i = std::uniform_int_distribution<std::int64_t>(0, p.output_elements() - 1)(rng);
        indices.front() = 0;                       // the corners of the output, always
        indices.back() = p.output_elements() - 1;
        auto device_indices = make_device_array<std::int64_t>(sample);
        auto oracle = make_device_array<double>(sample);
        FFTCONV_CUDA_TRY(cudaMemcpy(device_indices.data(), indices.data(), sizeof(std::int64_t) * indices.size(),
                                    cudaMemcpyHostToDevice));
        direct_conv_gpu_sampled(p, x.data(), w.data(), device_indices.data(), sample, oracle.data(), ctx.stream());
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
        exact = to_host(oracle.data(), sample);
        got.resize(indices.size());
        for (std::size_t s = 0; s < indices.size(); ++s)
            FFTCONV_CUDA_TRY(cudaMemcpy(&got[s], y.data() + indices[s], sizeof(float), cudaMemcpyDeviceToHost));
    }
    const accuracy a = compare(got, exact);
    INFO(to_string(p), " ", std::string(to_string(kind)), " seed=", seed, " tile_extent=", ctx.plan(p).geometry.tile_extent(),
         " rel_l2=", a.relative_l2, " worst=", a.worst_fraction, " non_finite=", a.non_finite,
         sample > 0 ? " (sampled outputs)" : "");
    check_bar(a);
    return a;
}

// Both input distributions; returns the worse of the two.
inline reference::accuracy check_conv(context& ctx, const problem& p, std::uint64_t seed,
                                      const conv_runner& run = plain_conv, std::int64_t sample = 0) {
    const auto normal = check_conv_kind(ctx, p, seed, reference::input_kind::normal, run, sample);
    const auto uniform = check_conv_kind(ctx, p, seed + 1, reference::input_kind::uniform, run, sample);
    return worse(normal, uniform);
}

// The whole operator (padding, groups, rectangular kernels from `p`; a bias
// when with_bias; through a filter spectrum when reuse) on fresh inputs of
// `kind`, every output against the float64 oracle.
inline reference::accuracy check_operator_kind(context& ctx, const problem& p, bool with_bias, bool reuse,
                                               std::uint64_t seed, reference::input_kind kind) {
    using namespace reference;
    auto [x, w, y] = make_conv_tensors(p, seed, kind, ctx.stream());
    auto bias = make_device_array<float>(p.out_channels);
    fill_input(kind, bias.data(), bias.size, seed ^ 0xb1a5ull, ctx.stream());
    const float* b = with_bias ? bias.data() : nullptr;
    if (reuse) {
        const filter_spectrum spectrum = ctx.transform_filter(p, w.data());
        ctx.conv2d(p, x.data(), spectrum, b, y.data());
    } else {
        ctx.conv2d(p, x.data(), w.data(), b, y.data());
    }
    auto exact = make_device_array<double>(p.output_elements());
    direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream(), b);
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
    const accuracy a = compare(to_host(y.data(), y.size), to_host(exact.data(), exact.size));
    INFO(to_string(p), " bias=", with_bias, " reuse=", reuse, " ", std::string(to_string(kind)), " seed=", seed,
         " tile_extent=", ctx.plan(p).geometry.tile_extent(), " rel_l2=", a.relative_l2,
         " worst=", a.worst_fraction, " non_finite=", a.non_finite);
    check_bar(a);
    return a;
}

// Both input distributions; returns the worse of the two.
inline reference::accuracy check_operator(context& ctx, const problem& p, bool with_bias, bool reuse,
                                          std::uint64_t seed) {
    const auto normal = check_operator_kind(ctx, p, with_bias, reuse, seed, reference::input_kind::normal);
    const auto uniform = check_operator_kind(ctx, p, with_bias, reuse, seed + 1, reference::input_kind::uniform);
    return worse(normal, uniform);
}


struct gradient_accuracy {
    reference::accuracy data, filter, bias;
};

// Both gradients and the bias gradient of `p` on fresh inputs of `kind`
// against their float64 definitions, every element checked.
inline gradient_accuracy check_gradients(context& ctx, const problem& p, std::uint64_t seed, reference::input_kind kind) {
    using namespace reference;
    auto x = make_device_array<float>(p.input_elements());
    auto w = make_device_array<float>(p.filter_elements());
    auto dy = make_device_array<float>(p.output_elements());
    fill_input(kind, x.data(), x.size, seed, ctx.stream());
    fill_input(kind, w.data(), w.size, seed ^ 0x5deece66dull, ctx.stream());
    fill_input(kind, dy.data(), dy.size, seed ^ 0xd1ull, ctx.stream());
    auto dx = make_device_array<float>(p.input_elements());
    auto dw = make_device_array<float>(p.filter_elements());
    auto db = make_device_array<float>(p.out_channels);
    fill_nan(dx.data(), dx.size, ctx.stream());
    fill_nan(dw.data(), dw.size, ctx.stream());
    fill_nan(db.data(), db.size, ctx.stream());
    ctx.conv2d_backward_data(p, dy.data(), w.data(), dx.data());
    ctx.conv2d_backward_filter(p, x.data(), dy.data(), dw.data(), db.data());
    auto exact_dx = make_device_array<double>(p.input_elements());
    auto exact_dw = make_device_array<double>(p.filter_elements());
    auto exact_db = make_device_array<double>(p.out_channels);
    data_gradient_gpu(p, dy.data(), w.data(), exact_dx.data(), ctx.stream());
    filter_gradient_gpu(p, x.data(), dy.data(), exact_dw.data(), exact_db.data(), ctx.stream());
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
    gradient_accuracy a;
    a.data = compare(to_host(dx.data(), dx.size), to_host(exact_dx.data(), exact_dx.size));
    a.filter = compare(to_host(dw.data(), dw.size), to_host(exact_dw.data(), exact_dw.size));
    a.bias = compare(to_host(db.data(), db.size), to_host(exact_db.data(), exact_db.size));
    INFO(to_string(p), " ", std::string(to_string(kind)), " seed=", seed, " dx: rel_l2=", a.data.relative_l2,
         " worst=", a.data.worst_fraction, " dw: rel_l2=", a.filter.relative_l2, " worst=", a.filter.worst_fraction,
         " dbias: rel_l2=", a.bias.relative_l2, " worst=", a.bias.worst_fraction);
    CHECK(a.data.non_finite == 0);
    CHECK(a.data.relative_l2 <= reference::max_relative_l2);
    CHECK(a.data.worst_fraction <= 1.0);
    CHECK(a.filter.non_finite == 0);
    CHECK(a.filter.relative_l2 <= reference::max_filter_gradient_l2);
    CHECK(a.filter.worst_fraction <= 1.0);
    CHECK(a.bias.non_finite == 0);
    CHECK(a.bias.worst_fraction <= 1.0);
    return a;
}

// Both input distributions; the worse of the two for each gradient.
inline gradient_accuracy check_gradients(context& ctx, const problem& p, std::uint64_t seed) {
    const auto normal = check_gradients(ctx, p, seed, reference::input_kind::normal);
    const auto uniform = check_gradients(ctx, p, seed + 1, reference::input_kind::uniform);
    return {worse(normal.data, uniform.data), worse(normal.filter, uniform.filter), worse(normal.bias, uniform.bias)};
}

}  // namespace fftconv::testing
