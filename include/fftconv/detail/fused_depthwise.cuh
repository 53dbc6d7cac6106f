// fftconv/detail/fused_depthwise.cuh — a depthwise convolution (one input
// channel per group) in one kernel per tile pair: forward FFT, product with
// the output channel's filter spectrum, inverse FFT, write. Nothing but the
// filter spectrum goes through device memory between the image and y.
//
// Why it works with paired tiles: the two real tiles a, b of a pair belong to
// the same image (even tile slots, workspace_layout.hpp), so the same filter
// w applies to both, and the product is linear:
//   IFFT(FFT(a + i b) * conj(W)) = (a (*) w) + i (b (*) w),
// each correlation real (A conj(W) and B conj(W) are Hermitian). So no split
// of the pair's spectrum is needed: the full T x T grid is multiplied by
// conj(W), whose columns past T/2 come from Hermitian symmetry of the stored
// half spectrum.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fftconv/detail/engine.hpp"
#include "fftconv/detail/fused_tile_fft.cuh"

namespace fftconv::detail {

// Output tiles [0, tile_count) of `sink`, tile n = (o * batch + b) *
// tile_slots + tile of output channel o, from input channel
// (first_out + o) / multiplier of `source` (first_out: the pass's output
// channel 0 in the whole problem). filter[bin * filter_bin_stride + o] is
// output channel o's spectrum (bins T x (T/2 + 1), scaled by 1/T^2).
template <class Geometry>
__global__ void __launch_bounds__(fused_threads(Geometry::static_extents.tile_extent))
    depthwise_tiles(image_tiles<Geometry> source, const float2* __restrict__ filter, std::int64_t filter_bin_stride,
                    std::int64_t first_out, std::int64_t multiplier, output_tiles<Geometry> sink,
                    std::int64_t tile_count, std::int64_t first_pair) {
    constexpr int T = Geometry::static_extents.tile_extent;
    constexpr int pitch = T + 1, pairs = fused_pairs(T), freq_cols = T / 2 + 1;
    extern __shared__ float2 shared[];
    const int lane = threadIdx.x, group = threadIdx.y;
    float2* z = shared + group * T * pitch;
    const std::int64_t n0 = 2 * (first_pair + std::int64_t(blockIdx.x) * pairs + group);

    // The pair's image: output image (o, b) reads input image (c, b).
    const std::int64_t image = n0 / source.tile_slots, tile = n0 % source.tile_slots;
    const std::int64_t o = image / sink.batch, b = image % sink.batch;
    const std::int64_t c = (first_out + o) / multiplier;
    const std::int64_t input0 = (c * source.batch + b) * source.tile_slots + tile;
    tile_window wa = tile_window{}, wb = tile_window{};
    if (n0 < tile_count) wa = source.window(input0);
    if (n0 + 1 < tile_count) wb = source.window(input0 + 1);

    load_pair<T>(z, lane, source.data(), wa, wb, 1.0f);
    __syncthreads();
    transform_row<T, false>(z, lane, max(wa.rows, wb.rows));
    __syncthreads();

    // Forward column `lane`, times conj(W) of output channel o, back to z.
    {
        float2 v[T];
        transform_column<T, false>(z, lane, v);
        const float2* w = filter + (n0 < tile_count ? o : 0);
#pragma unroll
        for (int k = 0; k < T; ++k) {
            const int r = bit_reversed<T>.index[k];
            // W[r][lane]: stored for columns 0..T/2; W[r][s] = conj(W[-r][-s]) past them.
            const bool stored = lane < freq_cols;
            const int fr = stored ? r : (T - r) % T, fs = stored ? lane : T - lane;
            float2 wk = w[std::int64_t(fr * freq_cols + fs) * filter_bin_stride];
            if (!stored) wk.y = -wk.y;
            z[r * pitch + lane] = float2{v[k].x * wk.x + v[k].y * wk.y, v[k].y * wk.x - v[k].x * wk.y};  // v conj(w)
        }
    }
    __syncthreads();

    // Inverse rows, then columns straight to y.
    transform_row<T, true>(z, lane);
    __syncthreads();
    write_pair<T>(z, lane, sink, n0, tile_count);
}

template <class Geometry>
void launch_depthwise_tiles(engine& e, const image_tiles<Geometry>& source, const float2* filter,
                            std::int64_t filter_bin_stride, std::int64_t first_out, std::int64_t multiplier,
                            const output_tiles<Geometry>& sink, std::int64_t tile_count, cudaStream_t stream) {
    constexpr int T = Geometry::static_extents.tile_extent;
    const auto kernel = depthwise_tiles<Geometry>;
    allow_shared_bytes(kernel, fused_shared_bytes(T));
    e.log_launch(reinterpret_cast<const void*>(kernel));
    const std::int64_t pair_count = (tile_count + 1) / 2;
    for (std::int64_t first = 0; first < pair_count; first += max_fused_blocks * fused_pairs(T)) {
        const auto blocks = unsigned(std::min(max_fused_blocks, ceil_div(pair_count - first, fused_pairs(T))));
        kernel<<<blocks, dim3(T, fused_pairs(T)), fused_shared_bytes(T), stream>>>(
            source, filter, filter_bin_stride, first_out, multiplier, sink, tile_count, first);
        FFTCONV_CHECK_LAUNCH();
    }
}

}  // namespace fftconv::detail
