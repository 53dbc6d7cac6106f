// fftconv/detail/kernels/fused_depthwise.cuh — a depthwise convolution (one input
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
//
// Tile extents: the power-of-two ones transform a line in one thread's
// registers between transposing passes (fused_tile_fft.cuh); 48 and 96
// transform it in place in shared memory (radix3_line_fft.cuh), their
// filter spectrum made by a direct DFT in double (filter_dft.cuh).
#pragma once

#include <algorithm>
#include <cstdint>

#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/kernels/fused_tile_fft.cuh"
#include "fftconv/detail/kernels/radix3_line_fft.cuh"

namespace fftconv::detail {

// The filter spectrum the kernel reads, per output channel (made by
// channel_major_filter, spectral_product.hpp): tile_family::
// depthwise_filter_bins bins, in natural order at the power-of-two extents;
// at the radix-3 extents in the digit-reversed order both passes leave
// (frequency_in_slot along each axis), so that a warp's lanes, 32
// consecutive column slots, read 256 contiguous bytes, with no mirror or
// sign to find.

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


// The outputs of a pair that `part` selects: both tiles, or the real part
// alone into the first or the second.
template <class Geometry, class Element>
__device__ output_pair selected_outputs(const output_tiles<Geometry, Element>& sink, std::int64_t n, std::int64_t tile_count,
                                        pair_part part) {
    output_pair out = output_pair_at(sink, n, tile_count);
    if (part == pair_part::second_alone) {
        out.real = out.imag;
        out.real_bias = out.imag_bias;
    }
    if (part != pair_part::both) out.imag = tile_window{};
    return out;
}

// Rows [first, first + count) of output column `lane` of a tile pair from z
// (natural order) straight to y (coalesced across the warp): factor.x times
// the real part into out.real, factor.y times the imaginary part into
// out.imag, each plus its bias.
template <int T, class E>
__device__ __forceinline__ void store_output_rows(const float2* z, int lane, E* y, const output_pair& out,
                                                  int first, int count, float2 factor) {
    constexpr int pitch = T + 1;
    const bool real = lane < out.real.cols, imag = lane < out.imag.cols;
    if (!(real || imag)) return;
    const int last = min(first + count, max(real ? out.real.rows : 0, imag ? out.imag.rows : 0));
    window_cursor at_real(y, out.real, lane), at_imag(y, out.imag, lane);
    at_real.skip_rows(first);
    at_imag.skip_rows(first);
#pragma unroll 4
    for (int r = first; r < last; ++r) {
        const float2 value = z[r * pitch + lane];
        if (real && r < out.real.rows) at_real.store(factor.x * value.x + out.real_bias);
        if (imag && r < out.imag.rows) at_imag.store(factor.y * value.y + out.imag_bias);
        at_real.next_row();
        at_imag.next_row();
    }
}

// The radix-3 product, between the columns' last forward step and their
// first inverse step, all three in registers: the slots 3k + r (k in
// [k_first, k_last), r < 3) of column slot `lane` (at `column`) hold the
// column's subsequence spectra X_r[k]; the forward butterfly makes
// Z[k + P s], in slot 3k + s; each becomes Z conj(W) with W from the
// slot-ordered filter `w` (tile_family::depthwise_filter_bins), and the inverse butterfly
// writes back what the inverse subsequence transforms read. (Three steps
// through shared memory before: two more round trips of the column and two
// more barriers.)
template <int T>
__device__ __forceinline__ void radix3_filter_step(float2* column, int lane, const float2* w, int k_first,
                                                   int k_last) {
    constexpr int pitch = T + 1;
    float2* at = column + 3 * k_first * pitch;
    const float2* filter = w + 3 * k_first * T + lane;
#pragma unroll 2
    for (int k = k_first; k < k_last; ++k, at += 3 * pitch, filter += 3 * T) {
        float2 v[3] = {at[0], at[pitch], at[2 * pitch]};
        const float2 c[3] = {filter[0], filter[T], filter[2 * T]};
        radix3_butterfly<T, false>(v[0], v[1], v[2], k);
#pragma unroll
        for (int s = 0; s < 3; ++s)
            v[s] = float2{v[s].x * c[s].x + v[s].y * c[s].y, v[s].y * c[s].x - v[s].x * c[s].y};  // v conj(c)
        radix3_butterfly<T, true>(v[0], v[1], v[2], k);
        at[0] = v[0];
        at[pitch] = v[1];
        at[2 * pitch] = v[2];
    }
}

// Barriers of the radix-3 passes. At T = 96 (three threads a line, one pair
// a block) the 96 threads of lines [32 q, 32 q + 32), q = lane / 32, are
// warps q, q + 3, q + 6 of the block; they load and store the rows they
// transform, so between steps of their lines (line_sync) and between the
// load or store and their row passes (rows_sync) a named barrier among them
// suffices: only the transposes between row and column passes wait for the
// whole block. At T = 48 (one thread a line) a line's steps are one
// thread's (no barrier), and rows_sync is the block's.
template <int T>
__device__ __forceinline__ void rows_sync(int lane) {
    if constexpr (tile_family_of(T).line_threads == 3) {
        static_assert(tile_family_of(T).pairs == 1, "one pair a block: barrier ids 1..3 are its line groups'");
        // Constant ids: a register id makes ptxas reserve all 16.
        if (lane < 32) asm volatile("bar.sync 1, 96;" ::: "memory");
        else if (lane < 64) asm volatile("bar.sync 2, 96;" ::: "memory");
        else asm volatile("bar.sync 3, 96;" ::: "memory");
    } else {
        __syncthreads();
    }
}
template <int T>
__device__ __forceinline__ void line_sync(int lane) {
    if constexpr (tile_family_of(T).line_threads > 1) rows_sync<T>(lane);
}

// Where a thread of a radix-3 pair loads and stores: `rows` rows from
// `first_row` of column `column`. One thread a line: its own column, every
// row. Three (T = 96): the 32 x 32 block of its line group's rows
// [32 q, 32 q + 32) and columns [32 share, 32 share + 32), each warp's
// accesses 32 consecutive columns of a row (coalesced).
template <int T>
struct radix3_block {
    int column, first_row;
    static constexpr int rows = tile_family_of(T).line_threads == 3 ? 32 : T;
    __device__ radix3_block(int lane, int share)
        : column(tile_family_of(T).line_threads == 3 ? 32 * share + lane % 32 : lane),
          first_row(tile_family_of(T).line_threads == 3 ? lane / 32 * 32 : 0) {}
};

// Whether a largest magnitude (max_magnitude's: NaN where a value was) is a
// finite value of at least 2^64.
__device__ __forceinline__ bool overflows_unbalanced(float largest) {
    const unsigned bits = __float_as_uint(largest);
    return bits >= 0x5f800000u && bits < 0x7f800000u;
}

// The barrier after a pair's load (the whole pair's, not a line group's:
// every thread's largest magnitude is in before any reads them), and the
// pair's factors. Balanced: its largest magnitudes gathered, false where
// check_finite finds a value not finite. Unbalanced: whether some value of
// the block could overflow (`huge`), which makes both partners' factors
// 2^-64 in and 2^64 out.
template <bool balance, class Largest>
__device__ __forceinline__ bool pair_loaded(Largest& largest_of, int linear, float2 largest, bool finite,
                                            bool check_finite, bool& huge) {
    huge = false;
    if constexpr (balance) {
        largest_of.add(linear, largest);
        if (check_finite) return __syncthreads_and(finite);
        __syncthreads();  // a plain barrier where nothing is checked (no reduction)
    } else {
        huge = __syncthreads_or(overflows_unbalanced(largest.x) || overflows_unbalanced(largest.y));
    }
    return true;
}
template <bool balance, class Largest>
__device__ __forceinline__ pair_scale pair_factors(const Largest& largest_of, int group, bool huge) {
    if constexpr (balance) return largest_of.scale(group);
    if (!huge) return pair_scale{};
    return pair_scale{float2{0x1p-64f, 0x1p-64f}, float2{0x1p64f, 0x1p64f}, true};
}

// Input windows in_real + i in_imag of x (empty: none) -> z, transformed,
// times conj(W) of the filter `w` (the output channel's spectrum, its bins
// contiguous), inverse transformed, written to output tiles n, n + 1 of
// `sink` as `part` says (those in [0, tile_count)); their windows are found
// after the transforms, not kept through them (at T = 64 that spilled).
// With `balance` (the two tiles may be two samples) each is balanced before
// the shared transform and taken back on the way out (pair_scale), their
// largest magnitudes gathered in `largest_of` by the block's thread
// `linear`; with check_finite it returns false right after the load when a
// loaded value (in any thread of the block) is not finite, else true.
// (Checking the loaded values costs fewer registers than checking the
// spectrum's DC bin.) Without `balance` (two tiles of one image, which need
// no balancing) the pair's factors are none, or, where some finite value of
// the block's tiles reaches 2^64 (which the shared transform could
// overflow), 2^-64 on the way in and 2^64 on the way out for both partners:
// constants behind one block-wide flag, not registers kept through the
// passes; it returns true.
//
// Powers of two: four transposing passes (fused_tile_fft.cuh, read_row)
// over one FFT body: the input's rows, the columns (times conj(W)), the rows
// again, the columns again to y. The inverse runs as a forward transform of
// the conjugate, IFFT(Y) = conj(FFT(conj(Y))): the second pass stores
// conj(Z conj(W)), and the last one holds conj(y), whose imaginary part is
// negated on the way out.
// Radix 3 (tile_family::line_threads a line, the thread's `share`): in-place
// passes (radix3_line_fft.cuh) over the rows that hold input, the columns
// (their last forward step, the product and their first inverse step in
// registers: radix3_filter_step), the columns inverse, the rows that hold
// outputs; then y from z. The forward passes leave digit-reversed order, the
// inverse ones natural. A block barrier only where rows turn into columns
// and back; elsewhere the line group's (rows_sync, line_sync).
template <int T, bool balance, class Geometry, class Largest, class E>
__device__ __forceinline__ bool depthwise_pair(float2* z, Largest& largest_of, int lane, int share, int group,
                                               const E* x, tile_window in_real, tile_window in_imag,
                                               const float2* w, const output_tiles<Geometry, E>& sink, std::int64_t n,
                                               std::int64_t tile_count, pair_part part, bool check_finite) {
    // The input rows either window holds: the others are zero, and so is their FFT.
    const int rows = max(in_real.rows, in_imag.rows), first_row = first_window_row(in_real, in_imag);
    const int linear = (group * tile_family_of(T).line_threads + share) * T + lane;

    if constexpr (tile_family_of(T).lines == line_transform::registers) {
        float2 largest;
        const bool finite = load_pair<T>(z, lane, x, in_real, in_imag, 1.0f, largest);
        bool huge;
        if (!pair_loaded<balance>(largest_of, linear, largest, finite, check_finite, huge)) return false;
        const pair_scale factors = pair_factors<balance>(largest_of, group, huge);
#pragma unroll 1  // at every T: unrolled, T = 32 took 128 registers instead of 102
        for (int pass = 0; pass < 4; ++pass) {
            float2 v[T];
            read_row<T>(z, lane, v);
            if (pass == 0 && factors.active)
#pragma unroll
                for (int k = 0; k < T; ++k) v[k] = scaled(v[k], factors.in);
            tile_sync<T>(group);  // every row is in registers before the columns overwrite them
            const bool live =
                pass == 0 ? lane >= first_row && lane < rows : pass == 3 ? lane < sink.outputs.wide : true;
            if (live) fft_in_registers<T, false>(v);
            if (pass == 3) {
                store_output_column<T>(v, lane, sink.y, selected_outputs(sink, n, tile_count, part),
                                       float2{factors.out.x, -factors.out.y});
                break;
            }
            write_column<T>(z, lane, v);
            if (pass == 1) times_conj_filter<T>(z, lane, w);
            tile_sync<T>(group);
        }
    } else {
        constexpr int pitch = T + 1, line_threads = tile_family_of(T).line_threads;
        const radix3_block<T> block(lane, share);
        float2 largest;
        const bool finite =
            load_pair<T, block.rows>(z, block.column, x, in_real, in_imag, 1.0f, largest, block.first_row);
        bool huge;
        if (!pair_loaded<balance>(largest_of, linear, largest, finite, check_finite, huge)) return false;
        const pair_scale factors = pair_factors<balance>(largest_of, group, huge);
        int k_first, k_last;
        radix3_share<T, line_threads>(share, k_first, k_last);
        float2* row = z + lane * pitch;  // row `lane`
        float2* column = z + lane;       // column `lane`
        // Forward (digit-reversed order out): the rows that hold input, then
        // every column, whose last step runs with the product and the
        // inverse's first (radix3_filter_step); the inverse (natural order
        // out): every column, then the rows that hold outputs.
        const bool input_row = lane >= first_row && lane < rows;
        // Partners of one binary exponent (the common case) need no factors.
        if (input_row && factors.active)
#pragma unroll 1
            for (int r = share; r < 3; r += line_threads) radix3_subsequence_fft<T, false, 1>(row, r, factors.in);
        else if (input_row)
#pragma unroll 1
            for (int r = share; r < 3; r += line_threads) radix3_subsequence_fft<T, false, 1>(row, r);
        line_sync<T>(lane);
        if (input_row) radix3_step<T, false, 1>(row, k_first, k_last);
        __syncthreads();
#pragma unroll 1
        for (int r = share; r < 3; r += line_threads) radix3_subsequence_fft<T, false, pitch>(column, r);
        line_sync<T>(lane);
        radix3_filter_step<T>(column, lane, w, k_first, k_last);
        line_sync<T>(lane);
#pragma unroll 1
        for (int r = share; r < 3; r += line_threads) radix3_subsequence_fft<T, true, pitch>(column, r);
        __syncthreads();
        const bool output_row = lane < sink.outputs.high;
        if (output_row) radix3_step<T, true, 1>(row, k_first, k_last);
        line_sync<T>(lane);
        if (output_row)
#pragma unroll 1
            for (int r = share; r < 3; r += line_threads) radix3_subsequence_fft<T, true, 1>(row, r);
        rows_sync<T>(lane);
        store_output_rows<T>(z, block.column, sink.y, selected_outputs(sink, n, tile_count, part), block.first_row,
                             block.rows, factors.out);
    }
    return true;
}


// depthwise_pair for one tile (the rare path of non-finite inputs): not
// inlined, so that the kernel's registers stay those of the common path;
// its arguments by value (references to the kernel's parameters made the
// kernel copy them to local memory and read every output address from there).
template <int T, class Geometry, class Largest, class E>
__device__ __noinline__ void depthwise_alone(float2* z, Largest& largest_of, int lane, int share, int group,
                                             const E* x, tile_window in, const float2* w,
                                             output_tiles<Geometry, E> sink, std::int64_t n, std::int64_t tile_count,
                                             pair_part part) {
    depthwise_pair<T, true>(z, largest_of, lane, share, group, x, in, tile_window{}, w, sink, n, tile_count, part,
                            false);
}

// Output tiles [0, tile_count) of `sink`, tile n = (o * batch + b) *
// tile_slots + tile of output channel o, from input channel
// (first_out + o) / multiplier of `source` (first_out: the pass's output
// channel 0 in the whole problem). filter[o * bins + bin] is output channel
// o's spectrum (tile_family::depthwise_filter_bins, scaled by 1/T^2: channel_major_filter).
//
// With spanning_pairs (odd tile slots: the layout gives a depthwise problem
// even tile slots only when batch x tiles is odd), a pair (n, n + 1) may span
// two samples of the same output channel: one filter serves both. Its
// partners are balanced (pair_scale), and a non-finite input would reach the
// other sample, so a block whose pairs hold one transforms each of its tiles
// alone (imaginary part zero), and only the tiles whose window holds it see
// it. Without, a pair is two tiles of one image: no balancing and no check.
// The rare path is a call of its own (depthwise_alone): a second inlined
// copy, or a loop around one, cost the common path registers (T = 32: 160
// in a loop, against 128).
template <class Geometry, bool spanning_pairs, class Element>
__global__ void __launch_bounds__(tile_family_of(Geometry::static_extents.tile_extent).depthwise_threads(),
                                  tile_family_of(Geometry::static_extents.tile_extent).depthwise_min_blocks)
    depthwise_tiles(image_tiles<Geometry, Element> source,
                    const float2* __restrict__ filter,
                    std::int64_t first_out, std::int64_t multiplier, output_tiles<Geometry, Element> sink,
                    std::int64_t tile_count, std::int64_t first_pair) {
    constexpr int T = Geometry::static_extents.tile_extent;
    constexpr int pairs = tile_family_of(T).pairs;
    extern __shared__ float2 shared[];
    __shared__ pair_largest<tile_family_of(T).depthwise_threads(), T * tile_family_of(T).line_threads> largest_of;
    const int lane = threadIdx.x, share = threadIdx.y, group = threadIdx.z;
    float2* z = shared + group * tile_family_of(T).tile_stride();
    const std::int64_t n0 = 2 * (first_pair + std::int64_t(blockIdx.x) * pairs + group);

    // The pair's output tiles n0, n0 + 1 (the same channel o: the layout
    // never lets a pair span two channels) read input channel c's.
    const tile_place a = sink.grid.place(n0), b = sink.grid.next(a);
    const std::int64_t o = a.channel, c = (first_out + o) / multiplier;
    const tile_window in_a = n0 < tile_count ? source.window(c, a) : tile_window{};
    const tile_window in_b = n0 + 1 < tile_count ? source.window(c, b) : tile_window{};
    const float2* w = filter + (n0 < tile_count ? o : 0) * tile_family_of(T).depthwise_filter_bins();

    if (depthwise_pair<T, spanning_pairs>(z, largest_of, lane, share, group, source.data(), in_a, in_b, w, sink, n0,
                                          tile_count, pair_part::both, spanning_pairs))
        return;
    if constexpr (spanning_pairs) {
        // Some loaded value is not finite: each tile alone, in the real part.
        depthwise_alone<T>(z, largest_of, lane, share, group, source.data(), in_a, w, sink, n0, tile_count,
                           pair_part::first_alone);
        __syncthreads();  // z is read to the end of the first
        depthwise_alone<T>(z, largest_of, lane, share, group, source.data(), in_b, w, sink, n0, tile_count,
                           pair_part::second_alone);
    }
}

template <class Geometry, class Element>
void launch_depthwise_tiles(const image_tiles<Geometry, Element>& source, const float2* filter,
                            std::int64_t first_out, std::int64_t multiplier, const output_tiles<Geometry, Element>& sink,
                            std::int64_t tile_count, cudaStream_t stream) {
    constexpr tile_family family = tile_family_of(Geometry::static_extents.tile_extent);
    const auto kernel = source.grid.tile_slots % 2 != 0 ? depthwise_tiles<Geometry, true, Element>
                                                        : depthwise_tiles<Geometry, false, Element>;
    allow_shared_bytes(kernel, family.shared_bytes());
    const std::int64_t pair_count = (tile_count + 1) / 2;
    for (std::int64_t first = 0; first < pair_count; first += max_fused_blocks * family.pairs) {
        const auto blocks = unsigned(std::min(max_fused_blocks, ceil_div(pair_count - first, family.pairs)));
        launch(kernel, blocks, dim3(family.tile_extent, family.line_threads, family.pairs), family.shared_bytes(),
               stream, source, filter, first_out, multiplier, sink, tile_count, first);
    }
}

}  // namespace fftconv::detail
