// test/gpu/conv_check.hpp — the one routine every GPU accuracy test runs:
// fresh normal inputs, a NaN-poisoned output, fftconv, the float64 oracle,
// and the project's accuracy bar on every element.
#pragma once

#include "doctest.hpp"

#include <functional>

#include "fftconv/context.hpp"
#include "fftconv/detail/check.hpp"
#include "reference.hpp"

namespace fftconv::testing {

// How the output is produced: by default ctx.conv2d(p, x, w, y).
using conv_runner = std::function<void(context&, const problem&, const float*, const float*, float*)>;

inline void plain_conv(context& ctx, const problem& p, const float* x, const float* w, float* y) {
    ctx.conv2d(p, x, w, y);
}

inline reference::accuracy check_conv(context& ctx, const problem& p, std::uint64_t seed,
                                      const conv_runner& run = plain_conv) {
    using namespace reference;
    auto x = make_device_array<float>(p.input_elements());
    auto w = make_device_array<float>(p.filter_elements());
    auto y = make_device_array<float>(p.output_elements());
    auto exact = make_device_array<double>(p.output_elements());
    fill_normal(x.data(), x.size, seed, ctx.stream());
    fill_normal(w.data(), w.size, seed ^ 0x5deece66dull, ctx.stream());
    fill_nan(y.data(), y.size, ctx.stream());
    run(ctx, p, x.data(), w.data(), y.data());
    direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream());
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(ctx.stream()));
    const accuracy a = compare(to_host(y.data(), y.size), to_host(exact.data(), exact.size));
    INFO(to_string(p), " seed=", seed, " tile_extent=", ctx.plan(p).config.tile_extent,
         " rel_l2=", a.relative_l2, " worst=", a.worst_fraction, " non_finite=", a.non_finite);
    CHECK(a.non_finite == 0);
    CHECK(a.relative_l2 <= max_relative_l2);
    CHECK(a.worst_fraction <= 1.0);
    return a;
}

}  // namespace fftconv::testing
