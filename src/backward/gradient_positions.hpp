// src/backward/gradient_positions.hpp — the filter gradient's positions: dy cut into
// blocks of block_rows x block_cols outputs (gradient_operands.hpp,
// filter_blocks_of: block + kernel - 1 = the tile per axis), position q =
// (sample, block). Its two tiles on the tile's grid (64 or 32 points): the
// window of padded x the block's outputs read, and the dy block itself (zero
// past dy's edge). Their
// correlation on the grid has no circular wrap at the kernel's lags, so the
// filter gradient is the inverse FFT of X conj(D) summed over positions,
// cropped to Kh x Kw. The two paths that use it: depthwise_filter_gradient.cu
// (one input channel per group) and filter_gradient_gemm.cu (a GEMM over
// positions per frequency bin). Host code too: the host test checks the
// windows and blocks against the definition (test_gradient_operands).
#pragma once

#include <cstdint>

#include "fftconv/detail/tiling/tile_window.hpp"
#include "backward/gradient_operands.hpp"

namespace fftconv::detail {

struct gradient_positions {
    int tile;  // the grid's extent: 64, or 32 (filter_gradient_gemm.cu)
    std::int64_t batch, channels, out_channels;
    std::int64_t height, width, out_height, out_width, pad_height, pad_width;
    std::int64_t block_rows, block_cols, blocks_wide, blocks;  // blocks per sample

    FFTCONV_HOST_DEVICE constexpr std::int64_t count() const { return batch * blocks; }

    // Position q as (sample, block row, block column): found once, then
    // stepped (next); dividing 64-bit indices per position would be ~5% of
    // the depthwise filter gradient's instructions.
    struct place {
        std::int64_t b, row, col;
    };
    FFTCONV_HOST_DEVICE place place_of(std::int64_t q) const {
        const std::int64_t b = q / blocks, block = q - b * blocks, row = block / blocks_wide;
        return {b, row, block - row * blocks_wide};
    }
    FFTCONV_HOST_DEVICE place next(place at) const {
        if (++at.col == blocks_wide) {
            at.col = 0;
            if ((++at.row) * blocks_wide == blocks) {
                at.row = 0;
                ++at.b;
            }
        }
        return at;
    }

    // Input channel c's window of padded x at a position.
    FFTCONV_HOST_DEVICE tile_window x_window(std::int64_t c, const place& at) const {
        const std::int64_t y0 = at.row * block_rows - pad_height, x0 = at.col * block_cols - pad_width;
        return {((at.b * channels + c) * height + y0) * width + x0, window_begin(y0, tile),
                window_end(y0, height, tile), window_begin(x0, tile), window_end(x0, width, tile), width};
    }
    FFTCONV_HOST_DEVICE tile_window x_window(std::int64_t c, std::int64_t q) const { return x_window(c, place_of(q)); }
    // Output channel o's dy block at a position.
    FFTCONV_HOST_DEVICE tile_window dy_block(std::int64_t o, const place& at) const {
        const std::int64_t r0 = at.row * block_rows, c0 = at.col * block_cols;
        return {((at.b * out_channels + o) * out_height + r0) * out_width + c0, 0,
                clip(int(block_rows), out_height - r0), 0, clip(int(block_cols), out_width - c0), out_width};
    }
    FFTCONV_HOST_DEVICE tile_window dy_block(std::int64_t o, std::int64_t q) const { return dy_block(o, place_of(q)); }
};

constexpr gradient_positions positions_of(const problem& p, int tile = int(gradient_tile)) {
    const filter_blocks f = filter_blocks_of(p, tile);
    return {tile, p.batch, p.in_channels, p.out_channels, p.height, p.width, p.out_height(), p.out_width(),
            p.padding.height, p.padding.width, f.block_rows, f.block_cols, f.blocks_wide, f.count()};
}

// Whether the positions fit the 64-point tile (kernels up to 40 per axis;
// filter_gradient_gemm.cu takes the 32-point one for kernels up to 8).
constexpr bool fits_gradient_tile(const problem& p) {
    return p.kernel.height <= max_blocked_kernel && p.kernel.width <= max_blocked_kernel;
}

}  // namespace fftconv::detail
