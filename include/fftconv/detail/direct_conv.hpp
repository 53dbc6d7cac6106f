// fftconv/detail/direct_conv.hpp — depthwise conv2d without transforms, for
// the problems where a transform cannot pay (small kernels: a tile is mostly
// overlap). Depthwise only: with a channel sum the spectral GEMM shares each
// transform over all channels, and a direct sum over many channels and taps
// would need compensated summation to stay within the accuracy bar.
//
// Each block holds, per output plane it computes, the input window of a band
// of output rows and columns (zero padding included) and the filter in shared
// memory; each thread computes direct_rows x direct_strip outputs, each row
// of inputs read from shared memory once for all of its output rows. Sums
// run per filter row, then over the rows (the float error grows with each
// level's length, not with the whole kernel's). Padding, rectangular kernels,
// channel multipliers and bias are supported; a non-finite input reaches
// exactly the outputs whose window holds it.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/problem.hpp"

namespace fftconv::detail {

inline constexpr int direct_strip = 8;  // outputs per thread along a row...
inline constexpr int direct_rows = 4;   // ... in this many rows

// How a direct call is cut into blocks (all extents derived from the problem).
struct direct_blocking {
    std::int64_t strips_per_band;  // strips of a block, across
    std::int64_t column_bands;     // blocks across the output's width
    std::int64_t rows_per_band;    // output rows of a block (a multiple of direct_rows)
    std::int64_t row_bands;        // blocks down the output's height
    std::int64_t planes;           // output planes (sample, out channel) per block
    std::int64_t kernel_pitch;     // the filter's row in shared memory: kernel width rounded up to the strip
    std::int64_t input_pitch;      // the input window's row in shared memory
    std::size_t shared_bytes;      // per block
    int threads;                   // per block
};

// The blocking for `p` (validated), or shared_bytes == 0 when one output row
// of one plane would not fit in shared memory (the direct path cannot run it).
direct_blocking direct_blocking_for(const problem& p);

// Whether the direct path can run `p`: depthwise, and one plane's window
// and filter fit in shared memory.
bool direct_supports(const problem& p);

// y = conv2d(x, w) + bias (bias may be null), on `stream`. `p` must be supported.
void direct_conv(const problem& p, const float* x, const float* w, const float* bias, float* y, cudaStream_t stream);

}  // namespace fftconv::detail
