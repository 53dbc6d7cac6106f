// src/backward/gradient_operands.hpp — how each gradient becomes a forward
// convolution (src/api/backward.cpp): the forward problem, and where each element
// of its rearranged operands comes from. One definition for the kernels and
// for the host test of the algebra (test/host/test_gradient_operands.cpp,
// which runs it through the float64 reference on the CPU).
//
// Data gradient: dx = conv2d(dy', w') with w' the filter flipped and
// transposed within each group, and dy' dy with K - 1 - P zeros each side
// (the problem's padding), or cropped by P - K + 1 where P > K - 1.
// Filter gradient: cut dy into blocks of block_rows x block_cols outputs;
// dw' = conv2d(x', dy'') whose samples are the group's input channels, whose
// channels are (group, sample, block) — each the block's window of the padded
// x — and whose filters are dy's blocks; dw is dw' with its two outer axes
// swapped.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fftconv/config.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::detail {

// Where P > K - 1 the data gradient crops dy by this much on each side; else
// it pads by gradient_padding.
constexpr std::int64_t gradient_crop(std::int64_t padding, std::int64_t kernel) {
    return std::max<std::int64_t>(0, padding - kernel + 1);
}
constexpr std::int64_t gradient_padding(std::int64_t padding, std::int64_t kernel) {
    return std::max<std::int64_t>(0, kernel - 1 - padding);
}

// The forward problem whose output is the data gradient of `p`.
constexpr problem data_gradient_problem(const problem& p) {
    problem q = p;
    q.in_channels = p.out_channels;
    q.out_channels = p.in_channels;
    q.height = p.out_height() - 2 * gradient_crop(p.padding.height, p.kernel.height);
    q.width = p.out_width() - 2 * gradient_crop(p.padding.width, p.kernel.width);
    q.padding = {gradient_padding(p.padding.height, p.kernel.height),
                 gradient_padding(p.padding.width, p.kernel.width)};
    return q;
}

// The filter gradient's blocks of dy: block + K - 1 = the fused tile (64,
// or 32 where filter_gradient_gemm.cu chooses it) per axis, for blocks of at
// least min_block_on(tile) outputs; larger kernels, or outputs already that
// small, take the whole axis in one block (one tile over the image: slow,
// but the tile could not hold a useful block). The minimum bounds the work
// a block wastes on its window: (64 / 25)^2 = 6.6x the block's points at
// most on 64 points (kernels up to 40), (32 / 17)^2 = 3.5x on 32 (up to 16).
inline constexpr std::int64_t gradient_tile = 64;
constexpr std::int64_t min_block_on(std::int64_t tile) { return tile == 32 ? 17 : 25; }
// The largest kernel (per axis) whose blocks fit a grid.
constexpr std::int64_t max_blocked_kernel_on(std::int64_t tile) { return tile + 1 - min_block_on(tile); }
inline constexpr std::int64_t max_blocked_kernel = max_blocked_kernel_on(gradient_tile);  // 40

struct filter_blocks {
    std::int64_t block_rows, block_cols, blocks_high, blocks_wide;
    constexpr std::int64_t count() const { return blocks_high * blocks_wide; }
};

constexpr filter_blocks filter_blocks_of(const problem& p, std::int64_t tile = gradient_tile) {
    const auto block = [tile](std::int64_t out, std::int64_t kernel) {
        return std::min(kernel <= max_blocked_kernel_on(tile) ? tile + 1 - kernel : out, out);
    };
    const std::int64_t rows = block(p.out_height(), p.kernel.height), cols = block(p.out_width(), p.kernel.width);
    return {rows, cols, (p.out_height() + rows - 1) / rows, (p.out_width() + cols - 1) / cols};
}

// The forward problem whose output is the filter gradient of `p`, transposed.
constexpr problem filter_gradient_problem(const problem& p) {
    const filter_blocks f = filter_blocks_of(p);
    problem q = p;
    q.batch = p.group_in_channels();
    q.in_channels = p.groups * p.batch * f.count();
    q.out_channels = p.out_channels;
    q.height = f.block_rows + p.kernel.height - 1;
    q.width = f.block_cols + p.kernel.width - 1;
    q.kernel = {f.block_rows, f.block_cols};
    q.padding = {0, 0};
    return q;
}

// Each rearrangement maps element t of its output to the element of its
// input it copies, or -1 for a zero.

// w' of the data gradient: w'[c][og][u][v] = w[g Og + og][c - g Cg][Kh-1-u][Kw-1-v].
struct flipped_filter {
    std::int64_t group_in, group_out, kernel_height, kernel_width;
    FFTCONV_HOST_DEVICE std::int64_t source(std::int64_t t) const {
        const std::int64_t v = t % kernel_width, u = (t / kernel_width) % kernel_height;
        const std::int64_t og = (t / kernel_width / kernel_height) % group_out;
        const std::int64_t c = t / kernel_width / kernel_height / group_out;
        const std::int64_t o = c / group_in * group_out + og;
        return ((o * group_in + c % group_in) * kernel_height + (kernel_height - 1 - u)) * kernel_width +
               (kernel_width - 1 - v);
    }
};

// Blocks of planes with the plane axes reordered: output block (c, m, a, bi,
// bj) of rows x cols is rows bi * step_rows + offset_rows + [0, rows) and the
// same for columns of input plane (a * mid_count + m) * c_count + c, zero
// outside the plane's valid_rows x valid_cols. With one block the size of
// the plane it is a transpose of the outer axes; with offsets it crops or
// pads.
// Row `line` of the output (its elements line * cols + j) copies
// source + j for j in [begin, end) and is zero elsewhere: the kernels decompose
// the index once per row, not once per element.
struct row_span {
    std::int64_t source, begin, end;
};

struct block_gather {
    std::int64_t a_count, mid_count, c_count;
    std::int64_t in_rows, in_cols, valid_rows, valid_cols;
    std::int64_t rows, cols, step_rows, step_cols, offset_rows, offset_cols;
    std::int64_t blocks_high, blocks_wide;
    FFTCONV_HOST_DEVICE row_span row(std::int64_t line) const {
        const std::int64_t i = line % rows;
        std::int64_t r = line / rows;
        const std::int64_t bj = r % blocks_wide, bi = (r / blocks_wide) % blocks_high;
        r /= blocks_wide * blocks_high;
        const std::int64_t a = r % a_count, m = (r / a_count) % mid_count, c = r / a_count / mid_count;
        const std::int64_t row = bi * step_rows + offset_rows + i, col0 = bj * step_cols + offset_cols;
        if (row < 0 || row >= valid_rows) return {0, 0, 0};
        const std::int64_t begin = col0 < 0 ? -col0 : 0, end = valid_cols - col0 < cols ? valid_cols - col0 : cols;
        return {(((a * mid_count + m) * c_count + c) * in_rows + row) * in_cols + col0, begin, end};
    }
    FFTCONV_HOST_DEVICE std::int64_t source(std::int64_t t) const {
        const row_span s = row(t / cols);
        const std::int64_t j = t % cols;
        return j >= s.begin && j < s.end ? s.source + j : -1;
    }
};

// dy' of the data gradient (dy cropped where P > K - 1).
constexpr block_gather cropped_gradient(const problem& p) {
    const problem q = data_gradient_problem(p);
    const std::int64_t top = gradient_crop(p.padding.height, p.kernel.height);
    const std::int64_t left = gradient_crop(p.padding.width, p.kernel.width);
    return {p.batch * p.out_channels, 1, 1, p.out_height(), p.out_width(), p.out_height(), p.out_width(),
            q.height, q.width, 0, 0, top, left, 1, 1};
}

// x' of the filter gradient: [Cg][G][B][blocks][window rows][window cols].
constexpr block_gather filter_gradient_windows(const problem& p) {
    const filter_blocks f = filter_blocks_of(p);
    const problem q = filter_gradient_problem(p);
    return {p.batch, p.groups, p.group_in_channels(), p.height, p.width, p.height, p.width, q.height, q.width,
            f.block_rows, f.block_cols, -p.padding.height, -p.padding.width, f.blocks_high, f.blocks_wide};
}

// dy'' of the filter gradient: [Cout][B][blocks][block rows][block cols].
constexpr block_gather filter_gradient_blocks(const problem& p) {
    const filter_blocks f = filter_blocks_of(p);
    return {p.batch, 1, p.out_channels, p.out_height(), p.out_width(), p.out_height(), p.out_width(),
            f.block_rows, f.block_cols, f.block_rows, f.block_cols, 0, 0, f.blocks_high, f.blocks_wide};
}

// Whether filter tap `tap` of an axis reads any of the input: it reads padded
// positions tap ... tap + outputs - 1, the input being [padding, padding + extent).
FFTCONV_HOST_DEVICE constexpr bool tap_sees_input(std::int64_t tap, std::int64_t outputs, std::int64_t padding, std::int64_t extent) {
    return tap + outputs - 1 >= padding && tap < padding + extent;
}

// dw from the forward's output [Cg][Cout][Kh][Kw]: [Cout][Cg][Kh][Kw], and
// exactly zero at the taps that see only padding (where the transforms would
// leave rounding noise the size of the largest taps' and fail the
// elementwise bar, as the forward's padding-only outputs did).
struct filter_gradient_result {
    block_gather transpose;
    std::int64_t out_height, out_width, pad_height, pad_width, height, width;
    // Whether element t of dw (or of its transpose: the same taps) reads any input.
    FFTCONV_HOST_DEVICE bool sees(std::int64_t t) const {
        const std::int64_t v = t % transpose.in_cols, u = (t / transpose.in_cols) % transpose.in_rows;
        return tap_sees_input(u, out_height, pad_height, height) && tap_sees_input(v, out_width, pad_width, width);
    }
    FFTCONV_HOST_DEVICE std::int64_t source(std::int64_t t) const { return sees(t) ? transpose.source(t) : -1; }
};

// Whether some tap of p's filter sees only padding (tap_sees_input false on an axis).
constexpr bool has_unseen_taps(const problem& p) {
    return !tap_sees_input(0, p.out_height(), p.padding.height, p.height) ||
           !tap_sees_input(p.kernel.height - 1, p.out_height(), p.padding.height, p.height) ||
           !tap_sees_input(0, p.out_width(), p.padding.width, p.width) ||
           !tap_sees_input(p.kernel.width - 1, p.out_width(), p.padding.width, p.width);
}

constexpr filter_gradient_result filter_gradient_transpose(const problem& p) {
    const std::int64_t kh = p.kernel.height, kw = p.kernel.width;
    return {{p.group_in_channels(), 1, p.out_channels, kh, kw, kh, kw, kh, kw, 0, 0, 0, 0, 1, 1},
            p.out_height(), p.out_width(), p.padding.height, p.padding.width, p.height, p.width};
}

}  // namespace fftconv::detail
