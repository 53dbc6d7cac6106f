// fftconv/detail/fused_depthwise.cuh — a depthwise convolution (one input
// channel per group) in one kernel per tile pair: forward FFT, product with
// the output channel's filter spectrum, inverse FFT, write. Nothing but the
// filter spectrum goes through device memory between the image and y.
//
// Why it works with paired tiles: the two real tiles a, b of a pair belong to
// the same output channel (workspace_layout.hpp), so the same filter w
// applies to both, and the product is linear:
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

// Column `lane` of the pair's spectrum Z in z (natural order) becomes
// conj(Z conj(W)), W the filter's spectrum `w`. A loop through shared
// memory, not a product in the FFT's registers: there the compiler hoisted
// the 64 loads of W above the transform and spilled (255 registers and 300
// bytes of spill at T = 64). Each thread reads back only what it wrote.
template <int T>
__device__ __forceinline__ void times_conj_filter(float2* z, int lane, const float2* w) {
    constexpr int pitch = T + 1, freq_cols = T / 2 + 1;
    // W[r][lane]: stored for columns 0..T/2; W[r][s] = conj(W[-r][-s]) past them.
    const bool stored = lane < freq_cols;
    const float sign = stored ? 1.0f : -1.0f;
    // W's loads in flight at a time: 16 at T = 64, where the FFT's registers
    // are free by now (4 round trips to L2 per column, not 8); 8 below (at
    // T = 32, 16 let the compiler hoist them above the FFT: 165 registers).
    constexpr int batch = T >= 64 ? 16 : 8;
    // Row r of the column: r * freq_cols past its row 0 when stored; the
    // mirror's row (T - r) % T, i.e. row 0 and then T - r: from a virtual
    // row T downwards. Offsets stepped a row at a time (an index select and
    // multiply per element were most of this loop's instructions).
    const int column = stored ? lane : T - lane, step = stored ? freq_cols : -freq_cols;
    int row = column + (stored ? 0 : T * freq_cols);  // 32-bit offsets: fewer registers than pointers
#pragma unroll batch
    for (int r = 0; r < T; ++r) {
        const float2 wr = w[r == 0 ? column : row];
        row += step;
        const float2 zr = z[r * pitch + lane];
        const float2 c{wr.x, sign * wr.y};
        z[r * pitch + lane] = float2{zr.x * c.x + zr.y * c.y, zr.x * c.y - zr.y * c.x};  // conj(z conj(c))
    }
}

// Which output tiles a transform of the pair (n, n + 1) writes: both (the
// real part to n, the imaginary part to n + 1), or one of them alone from
// the real part.
enum class pair_part { both, first_alone, second_alone };

// Input windows in_real + i in_imag of x (empty: none) -> z, transformed,
// times conj(W) of the filter `w` (the output channel's spectrum, its bins
// contiguous), inverse transformed, written to output tiles n, n + 1 of
// `sink` as `part` says (those in [0, tile_count)); their windows are found
// after the transforms, not kept through them (at T = 64 that spilled). With
// check_finite, returns false right after the load when a loaded value (in
// any thread of the block) is not finite; else true. (Checking the loaded
// values measured cheaper in registers than checking the spectrum's DC bin:
// 222 against 255 at T = 64.)
//
// Four transposing passes (fused_tile_fft.cuh, read_row) over one FFT body:
// the input's rows, the columns (times conj(W)), the rows again, the columns
// again to y. The inverse runs as a forward transform of the conjugate,
// IFFT(Y) = conj(FFT(conj(Y))): the second pass stores conj(Z conj(W)), and
// the last one holds conj(y), whose imaginary part is negated on the way out.
template <int T, class Geometry>
__device__ __forceinline__ bool depthwise_pair(float2* z, int lane, int group, const float* x, tile_window in_real,
                                               tile_window in_imag, const float2* w,
                                               const output_tiles<Geometry>& sink, std::int64_t n,
                                               std::int64_t tile_count, pair_part part, bool check_finite) {
    const bool finite = load_pair<T>(z, lane, x, in_real, in_imag, 1.0f);
    if (check_finite) {
        if (!__syncthreads_and(finite)) return false;
    } else {
        __syncthreads();  // a plain barrier where nothing is checked (no reduction)
    }
    // The input rows either window holds: the others are zero, and so is their FFT.
    const int rows = max(in_real.rows, in_imag.rows), first_row = first_window_row(in_real, in_imag);

#pragma unroll 1  // at every T: unrolled, T = 32 took 128 registers instead of 102
    for (int pass = 0; pass < 4; ++pass) {
        float2 v[T];
        read_row<T>(z, lane, v);
        tile_sync<T>(group);  // every row is in registers before the columns overwrite them
        const bool live = pass == 0 ? lane >= first_row && lane < rows : pass == 3 ? lane < sink.outputs.wide : true;
        if (live) fft_in_registers<T, false>(v);
        if (pass == 3) {
            output_pair out = output_pair_at(sink, n, tile_count);
            if (part == pair_part::second_alone) {
                out.real = out.imag;
                out.real_bias = out.imag_bias;
            }
            if (part != pair_part::both) out.imag = tile_window{};
            store_output_column<T>(v, lane, sink.y, out, -1.0f);
            break;
        }
        write_column<T>(z, lane, v);
        if (pass == 1) times_conj_filter<T>(z, lane, w);
        tile_sync<T>(group);
    }
    return true;
}

// Blocks per SM the registers must allow. At T = 64 the kernel is
// latency-bound at its natural 176 registers (2 blocks, 8 warps per SM);
// capped at 168 it fits 3, as many as shared memory allows, and ran 6-13%
// faster despite 84-132 bytes of spill. At T = 16 the kernel with a rare
// path (spanning pairs) takes 80 registers: 6 blocks ran 7% faster than 8
// blocks capped at 64 registers, where the cap spilled 200 bytes
// (docs/performance.md, v27).
constexpr int depthwise_min_blocks(int tile_extent) { return tile_extent == 64 ? 3 : tile_extent == 16 ? 6 : 0; }

// depthwise_pair for one tile (the rare path of non-finite inputs): not
// inlined, so that the kernel's registers stay those of the common path;
// its arguments by value (references to the kernel's parameters made the
// kernel copy them to local memory and read every output address from there).
template <int T, class Geometry>
__device__ __noinline__ void depthwise_alone(float2* z, int lane, int group, const float* x, tile_window in,
                                             const float2* w, output_tiles<Geometry> sink, std::int64_t n,
                                             std::int64_t tile_count, pair_part part) {
    depthwise_pair<T>(z, lane, group, x, in, tile_window{}, w, sink, n, tile_count, part, false);
}

// Output tiles [0, tile_count) of `sink`, tile n = (o * batch + b) *
// tile_slots + tile of output channel o, from input channel
// (first_out + o) / multiplier of `source` (first_out: the pass's output
// channel 0 in the whole problem). filter[o * bins + bin] is output channel
// o's spectrum (bins T x (T/2 + 1), scaled by 1/T^2: channel_major_filter).
//
// With spanning_pairs (odd tile slots: the layout gives a depthwise problem
// even tile slots only when batch x tiles is odd), a pair (n, n + 1) may span
// two samples of the same output channel: one filter serves both. A
// non-finite input would then reach the other sample, so a block whose pairs
// hold one transforms each of its tiles alone (imaginary part zero), and only
// the tiles whose window holds it see it. Without, a pair is two tiles of one
// image and the check costs nothing. The rare path is a call of its own
// (depthwise_alone): a second inlined copy, or a loop around one, cost the
// common path registers (T = 32: 160 in a loop, against 128).
template <class Geometry, bool spanning_pairs>
__global__ void __launch_bounds__(fused_threads(Geometry::static_extents.tile_extent),
                                  depthwise_min_blocks(Geometry::static_extents.tile_extent))
    depthwise_tiles(image_tiles<Geometry> source, const float2* __restrict__ filter, std::int64_t first_out, std::int64_t multiplier, output_tiles<Geometry> sink,
                    std::int64_t tile_count, std::int64_t first_pair) {
    constexpr int T = Geometry::static_extents.tile_extent;
    constexpr int pitch = T + 1, pairs = fused_pairs(T);
    extern __shared__ float2 shared[];
    const int lane = threadIdx.x, group = threadIdx.y;
    float2* z = shared + group * T * pitch;
    const std::int64_t n0 = 2 * (first_pair + std::int64_t(blockIdx.x) * pairs + group);

    // The pair's output tiles n0, n0 + 1 (the same channel o: the layout
    // never lets a pair span two channels) read input channel c's.
    const tile_place a = sink.grid.place(n0), b = sink.grid.next(a);
    const std::int64_t o = a.channel, c = (first_out + o) / multiplier;
    const tile_window in_a = n0 < tile_count ? source.window(c, a) : tile_window{};
    const tile_window in_b = n0 + 1 < tile_count ? source.window(c, b) : tile_window{};
    const float2* w = filter + (n0 < tile_count ? o : 0) * (T * (T / 2 + 1));

    if (depthwise_pair<T>(z, lane, group, source.data(), in_a, in_b, w, sink, n0, tile_count, pair_part::both,
                          spanning_pairs))
        return;
    if constexpr (spanning_pairs) {
        // Some loaded value is not finite: each tile alone, in the real part.
        depthwise_alone<T>(z, lane, group, source.data(), in_a, w, sink, n0, tile_count, pair_part::first_alone);
        __syncthreads();  // z is read to the end of the first
        depthwise_alone<T>(z, lane, group, source.data(), in_b, w, sink, n0, tile_count, pair_part::second_alone);
    }
}

template <class Geometry>
void launch_depthwise_tiles(engine& e, const image_tiles<Geometry>& source, const float2* filter,
                            std::int64_t first_out, std::int64_t multiplier,
                            const output_tiles<Geometry>& sink, std::int64_t tile_count, cudaStream_t stream) {
    constexpr int T = Geometry::static_extents.tile_extent;
    const auto kernel = source.grid.tile_slots % 2 != 0 ? depthwise_tiles<Geometry, true> : depthwise_tiles<Geometry, false>;
    allow_shared_bytes(kernel, fused_shared_bytes(T));
    e.log_launch(reinterpret_cast<const void*>(kernel));
    const std::int64_t pair_count = (tile_count + 1) / 2;
    for (std::int64_t first = 0; first < pair_count; first += max_fused_blocks * fused_pairs(T)) {
        const auto blocks = unsigned(std::min(max_fused_blocks, ceil_div(pair_count - first, fused_pairs(T))));
        kernel<<<blocks, dim3(T, fused_pairs(T)), fused_shared_bytes(T), stream>>>(
            source, filter, first_out, multiplier, sink, tile_count, first);
        FFTCONV_CHECK_LAUNCH();
    }
}

}  // namespace fftconv::detail
