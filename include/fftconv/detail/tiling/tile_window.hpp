// fftconv/detail/tiling/tile_window.hpp — where a tile of the fused transforms
// reads or writes in a tensor (fused_tile_fft.cuh), in host and device code
// alike: the host tests check the gradients' windows with it
// (src/backward/gradient_positions.hpp).
#pragma once

#include <cstdint>

#include "fftconv/config.hpp"

namespace fftconv::detail {

// Where real tile n lives: rows [row_begin, rows) and columns
// [col_begin, cols) of the T x T tile hold data[offset + r * row_stride + c];
// everything else is zero (or, for an output, not written). offset may point
// before the data (a tile hanging over the padding above or left of the
// image): only elements inside the window are read. tile_window{} is empty.
struct tile_window {
    std::int64_t offset;
    int row_begin, rows;
    int col_begin, cols;
    std::int64_t row_stride;
};

// The valid extent of a window: `extent`, or less at the image edge.
FFTCONV_HOST_DEVICE inline int clip(int extent, std::int64_t remaining) {
    return remaining < extent ? int(remaining) : extent;
}

// The part [begin, end) of a T-point window starting at `start` (may be
// negative: zero padding) that lies inside [0, extent).
FFTCONV_HOST_DEVICE inline int window_begin(std::int64_t start, int tile_extent) {
    return start >= 0 ? 0 : -start >= tile_extent ? tile_extent : int(-start);
}
FFTCONV_HOST_DEVICE inline int window_end(std::int64_t start, std::int64_t extent, int tile_extent) {
    const std::int64_t end = extent - start;
    return end <= 0 ? 0 : end >= tile_extent ? tile_extent : int(end);
}

}  // namespace fftconv::detail
