// fftconv/detail/pipeline.cuh — the overlap-save pipeline, written once for
// both kinds of geometry (tile_geometry<Cfg> constants or runtime_geometry).
//
// Tile extents 16, 32, 64 (fused transforms, fused_tile_fft.cuh):
//   filters  --forward_tiles-->  filter spectrum  (skipped with a filter_spectrum)
//   x        --forward_tiles-->  input spectrum
//   input spectrum x conj(filter spectrum)  --CGEMM-->  output spectrum
//   output spectrum  --inverse_tiles-->  y
// Any other extent (cuFFT):
//   filters  --pad_filters-->  real  --R2C-->  filter spectrum
//   x        --gather_tiles--> real  --R2C-->  input spectrum
//   (CGEMM)
//   output spectrum  --C2R-->  real  --scatter_tiles-->  y
//
// Everything is enqueued on the engine's stream; nothing synchronizes.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fftconv/detail/check.hpp"
#include "fftconv/detail/engine.hpp"
#include "fftconv/detail/fused_tile_fft.cuh"
#include "fftconv/detail/kernels.cuh"
#include "fftconv/detail/tiling.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

inline constexpr int block_threads = 256;

// Grid-stride kernels: enough blocks to fill the GPU many times over, never
// more than the hardware's grid limit.
inline unsigned grid_blocks(std::int64_t total) {
    const std::int64_t blocks = (total + block_threads - 1) / block_threads;
    return unsigned(std::clamp<std::int64_t>(blocks, 1, std::int64_t{1} << 20));
}

template <class Geometry>
constexpr tile_shape shape_of(const Geometry& geo) {
    return tile_shape{geo.kernel_extent, geo.tile_extent};
}

// The fused filter transform: the K x K filters, scaled by 1/T^2 (the inverse
// transform is unnormalised), into [bin][in_channel][out_channel].
template <int T>
void launch_filter_transform(const problem& p, const float* w, cufftComplex* spectrum, cudaStream_t stream) {
    const std::int64_t filter_count = p.in_channels * p.out_channels;
    launch_forward_tiles<T>(
        filter_tiles{w, p.in_channels, p.out_channels, int(p.kernel_extent), 1.0f / float(T * T)},
        filter_count, bin_stride(filter_count, tile_shape{int(p.kernel_extent), T}), spectrum, stream);
}

// Pads, scales and transforms the filters of `p` into `spectrum`
// ([bin][in_channel][out_channel], the layout multiply_spectra reads).
template <class Geometry>
void transform_filters(engine& e, const problem& p, const Geometry& geo, const pipeline_buffers& b,
                       const float* w, cufftComplex* spectrum) {
    const bool fused = with_fused_extent(geo, [&](auto extent) {
        launch_filter_transform<decltype(extent)::value>(p, w, spectrum, e.stream());
    });
    if (fused) return;
    const float scale = 1.0f / float(geo.tile_elements);  // the inverse transform is unnormalised
    const std::int64_t total = p.in_channels * p.out_channels * geo.tile_elements;
    pad_filters<<<grid_blocks(total), block_threads, 0, e.stream()>>>(
        geo, p.in_channels, p.out_channels, w, b.real, total, scale);
    FFTCONV_CHECK_LAUNCH();
    e.execute(*b.filter_plan, fft_direction::forward, b.real, spectrum, b.fft_work);
}

// y = conv2d(x, w). Exactly one of `w` (spatial filters) and `spectrum`
// (a filter spectrum made by transform_filters for this geometry) is non-null.
template <class Geometry>
void run_pipeline(engine& e, const problem& p, const Geometry& geo, const float* x, const float* w,
                  const cufftComplex* spectrum, float* y) {
    const tiling t = make_tiling(p, shape_of(geo));
    const pipeline_buffers b = prepare(e, p, t);

    const bool fused = with_fused_extent(geo, [&](auto extent) {
        constexpr int T = decltype(extent)::value;
        const cudaStream_t main = e.stream(), side = e.side_stream();
        // The filter and the image transforms are independent: the filter's
        // runs on the side stream, beside the image's.
        e.order(main, side, 0);
        if (w != nullptr) {
            launch_filter_transform<T>(p, w, b.filter_spectrum, side);
            spectrum = b.filter_spectrum;
        }
        launch_forward_tiles<T>(image_tiles{x, p.batch, p.in_channels, p.height, p.width, t.tiles_wide,
                                            t.tiles_per_image, geo.out_tile, T, 1.0f},
                                p.in_channels * t.gemm_rows, t.input_bin_stride, b.input_spectrum, main);
        e.order(side, main, 1);

        // Output channels in two halves: the inverse transform of the first
        // half (side stream) overlaps the GEMM of the second (main stream).
        const output_tiles sink{y, p.batch, p.out_channels, p.out_height(), p.out_width(),
                                t.tiles_wide, t.tiles_per_image, geo.out_tile};
        const std::int64_t tiles = p.out_channels * t.gemm_rows;
        std::int64_t split = p.out_channels / 2;
        if (split * t.gemm_rows % 2 != 0) --split;  // the halves meet between tile pairs
        if (split > 0) multiply_spectra(e, p, t, spectrum, b, 0, split);
        e.order(main, side, 2);
        launch_inverse_tiles<T>(b.output_spectrum, 0, split * t.gemm_rows, t.output_bin_stride, sink, side);
        if (split < p.out_channels) multiply_spectra(e, p, t, spectrum, b, split, p.out_channels);
        launch_inverse_tiles<T>(b.output_spectrum, split * t.gemm_rows, tiles, t.output_bin_stride, sink, main);
        e.order(side, main, 1);
    });
    if (fused) return;

    if (w != nullptr) {
        transform_filters(e, p, geo, b, w, b.filter_spectrum);
        spectrum = b.filter_spectrum;
    }
    launch_extents in{p.batch, p.height, p.width, p.out_height(), p.out_width(),
                      p.in_channels, t.tiles_wide, t.tiles_per_image};
    const std::int64_t input_total = p.in_channels * t.gemm_rows * geo.tile_elements;
    gather_tiles<<<grid_blocks(input_total), block_threads, 0, e.stream()>>>(geo, in, x, b.real,
                                                                            input_total);
    FFTCONV_CHECK_LAUNCH();
    e.execute(*b.input_plan, fft_direction::forward, b.real, b.input_spectrum, b.fft_work);

    multiply_spectra(e, p, t, spectrum, b);

    e.execute(*b.output_plan, fft_direction::inverse, b.output_spectrum, b.real, b.fft_work);
    launch_extents out = in;
    out.channels = p.out_channels;
    const std::int64_t output_total = p.output_elements();
    scatter_tiles<<<grid_blocks(output_total), block_threads, 0, e.stream()>>>(geo, out, b.real, y,
                                                                              output_total);
    FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
