// fftconv/detail/direct_conv.cuh — the direct path, for problems too small
// for the FFT pipeline's fixed costs (dispatch.hpp, direct_pays). One thread
// per output; every product and sum in double (exact products of floats, so
// the result is the float64 answer rounded once: more accurate than the FFT).
#pragma once

#include <cstdint>

#include "fftconv/detail/check.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

struct direct_extents {
    std::int64_t batch, in_channels, out_channels, height, width, kernel_extent, out_height, out_width;
};

__global__ void direct_conv(direct_extents e, const float* __restrict__ x, const float* __restrict__ w,
                            float* __restrict__ y, std::int64_t total) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const std::int64_t j = idx % e.out_width;
        const std::int64_t i = (idx / e.out_width) % e.out_height;
        const std::int64_t o = (idx / (e.out_width * e.out_height)) % e.out_channels;
        const std::int64_t b = idx / (e.out_width * e.out_height * e.out_channels);
        double sum = 0.0;
        for (std::int64_t c = 0; c < e.in_channels; ++c) {
            const float* xc = x + ((b * e.in_channels + c) * e.height + i) * e.width + j;
            const float* wc = w + (o * e.in_channels + c) * e.kernel_extent * e.kernel_extent;
            for (std::int64_t u = 0; u < e.kernel_extent; ++u)
                for (std::int64_t v = 0; v < e.kernel_extent; ++v)
                    sum += double(xc[u * e.width + v]) * double(wc[u * e.kernel_extent + v]);
        }
        y[idx] = float(sum);
    }
}

inline void run_direct(const problem& p, const float* x, const float* w, float* y, cudaStream_t stream) {
    const direct_extents e{p.batch,  p.in_channels,   p.out_channels, p.height,
                           p.width,  p.kernel_extent, p.out_height(), p.out_width()};
    const std::int64_t total = p.output_elements();
    constexpr int threads = 128;
    const auto blocks = unsigned(std::min<std::int64_t>((total + threads - 1) / threads, 1 << 20));
    direct_conv<<<blocks, threads, 0, stream>>>(e, x, w, y, total);
    FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
