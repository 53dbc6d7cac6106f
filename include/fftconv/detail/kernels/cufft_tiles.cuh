// fftconv/detail/kernels/cufft_tiles.cuh — the cuFFT path's three data-movement kernels
// around the FFTs. Each is written once against a Geometry with tile_geometry's member
// names: for a compiled configuration those are constants and the index
// arithmetic folds; for the generic path they are kernel arguments.
#pragma once

#include <cstdint>

#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {

// Extents a kernel needs besides the geometry, as plain integers.
struct launch_extents {
    std::int64_t batch;
    std::int64_t height;
    std::int64_t width;
    std::int64_t out_height;
    std::int64_t out_width;
    std::int64_t channels;        // in_channels for the gather, out_channels for the scatter
    tile_outputs outputs;         // per tile (tile_outputs_of): consecutive tiles are this far apart
    std::int64_t tiles_wide;
    std::int64_t tiles_per_image;
    tensor_strides strides;       // of x for the gather, of y for the scatter
    // Gather: the input row and column that the pass's output (0, 0) reads
    // first (negative over the zero padding; image_tiles in fused_tile_fft.cuh).
    std::int64_t first_row = 0, first_col = 0;
    const float* bias = nullptr;  // scatter: the pass's output channels' bias, or none
};

// Real tile n = (channel * batch + b) * tiles_per_image + tile reads the
// T x T window of image (b, channel) that the tile's outputs see; everything
// outside the image (padding, or past its edge) is zero (overlap-save needs
// the window to be exactly what a circular convolution of that size sees).
// x's elements: float, __nv_bfloat16 or __half.
template <class Geometry, class Real, class Element = float>
__global__ void gather_tiles(Geometry geo, launch_extents e, const Element* __restrict__ x,
                             Real* __restrict__ tiles, std::int64_t total) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const int col = int(idx % geo.tile_extent());
        const std::int64_t rest = idx / geo.tile_extent();
        const int row = int(rest % geo.tile_extent());
        const std::int64_t n = rest / geo.tile_extent();
        const std::int64_t tile = n % e.tiles_per_image;
        const std::int64_t image = n / e.tiles_per_image;  // channel * batch + b
        const std::int64_t b = image % e.batch;
        const std::int64_t channel = image / e.batch;
        const std::int64_t y0 = e.first_row + (tile / e.tiles_wide) * e.outputs.high + row;
        const std::int64_t x0 = e.first_col + (tile % e.tiles_wide) * e.outputs.wide + col;
        Real v = 0;
        if (y0 >= 0 && y0 < e.height && x0 >= 0 && x0 < e.width)
            v = to_float(x[b * e.strides.batch + channel * e.strides.channel + y0 * e.strides.row + x0]);
        tiles[idx] = v;
    }
}

// Real filter n = in_channel * out_channels + out_channel (in_channel within
// the output channel's group; w is [out][group_in_channels][Kh][Kw]): the
// Kh x Kw filter in the top-left corner of a T x T zero tile, times 1/T^2 (cuFFT's
// inverse is unnormalised; folding the scale here costs nothing).
template <class Geometry, class Real>
__global__ void pad_filters(Geometry geo, std::int64_t group_in_channels, std::int64_t out_channels,
                            const float* __restrict__ w, Real* __restrict__ tiles,
                            std::int64_t total, Real scale) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const int col = int(idx % geo.tile_extent());
        const std::int64_t rest = idx / geo.tile_extent();
        const int row = int(rest % geo.tile_extent());
        const std::int64_t n = rest / geo.tile_extent();
        const std::int64_t out_channel = n % out_channels;
        const std::int64_t in_channel = n / out_channels;
        Real v = 0;
        if (row < geo.kernel_height() && col < geo.kernel_width())
            v = scale * w[((out_channel * group_in_channels + in_channel) * geo.kernel_height() + row) *
                              geo.kernel_width() + col];
        tiles[idx] = v;
    }
}

// Output element (b, o, i, j) of the pass (y through its strides) is output
// (i mod To_h, j mod To_w) of tile (i / To_h, j / To_w) of
// real output tile (o * batch + b): the first To_h x To_w of each tile are
// the outputs no circular wrap-around reached (e.outputs: tile_outputs_of).
// y's elements: float, __nv_bfloat16 or __half (rounded once, from Real).
template <class Geometry, class Real, class Element = float>
__global__ void scatter_tiles(Geometry geo, launch_extents e, const Real* __restrict__ tiles,
                              Element* __restrict__ y, std::int64_t total) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const std::int64_t j = idx % e.out_width;
        const std::int64_t rest = idx / e.out_width;
        const std::int64_t i = rest % e.out_height;
        const std::int64_t image = rest / e.out_height;  // b * channels + o
        const std::int64_t o = image % e.channels;
        const std::int64_t b = image / e.channels;
        const std::int64_t tile = (i / e.outputs.high) * e.tiles_wide + j / e.outputs.wide;
        const std::int64_t n = (o * e.batch + b) * e.tiles_per_image + tile;
        const Real value =
            tiles[(n * geo.tile_extent() + i % e.outputs.high) * geo.tile_extent() + j % e.outputs.wide];
        y[b * e.strides.batch + o * e.strides.channel + i * e.strides.row + j] =
            from_float<Element>(float(e.bias == nullptr ? value : value + Real(e.bias[o])));
    }
}

}  // namespace fftconv::detail
