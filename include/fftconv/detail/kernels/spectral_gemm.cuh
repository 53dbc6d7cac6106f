// fftconv/detail/kernels/spectral_gemm.cuh — the device code of the spectral GEMM
// (the per-bin complex GEMM on the tensor cores at FP32 accuracy, 3xTF32
// split, Ootomo & Yokota 2022) and its host launch path, as templates, so that
// any CUDA translation unit can instantiate it; include it from .cu files only
// (nvcc). Interface and the product it computes: spectral_gemm.hpp. The
// library's generic path (src/kernels/spectral_gemm.cu) instantiates
// spectral_gemm_static<0>, which reads the channel count from the arguments;
// spectral_gemm_static<C> with C > 0 fixes the contraction depth at compile
// time (the k-tile count, the copies' row bounds), with results bit-identical
// to <0> (same arithmetic in the same order; test/gpu/test_spectral_gemm.cu).
//
// Why split TF32: the spectral GEMM is ~half of a large problem's time and
// cuBLAS's complex FP32 GEMM runs on the FP32 pipes (FFMA). TF32 alone (10
// mantissa bits) misses the accuracy bar by 1000x. Writing every FP32 value
// x as big + small, with big = x rounded to TF32 and small = (x - big) rounded
// to TF32, gives x to ~22 bits; x*y ~= big_x*big_y + big_x*small_y +
// small_x*big_y (the small*small term is below FP32 rounding).
//
// Why the accumulation is outside the tensor core: the tensor core adds its
// products into its accumulator with truncation, and a long sum inside it
// collects a one-signed error that FP32 round-to-nearest does not have. It is
// worst on positive data (uniform [0,1) inputs: the DC bin of every tile is a
// large positive sum). End to end on 256^2 K16 C128 B2, accumulating all of
// K inside the tensor core ("fast f32") gives 6.6e-7 relative L2 and fails
// the 5e-7 bar; each 8-deep k-step started from zero and added to FP32
// registers with ordinary adds gives 4.4e-7. This kernel does the latter: one
// chain of 6 mma per 16x8 output fragment per k-step for the real part and one
// for the imaginary part, then FADDs into the FP32 accumulators.
//
// Geometry: a CTA computes a BLOCK_O (output channels) x BLOCK_M (rows) tile
// of one bin; each warp 16 output channels x 8*FRAGS_M rows. The channel
// dimension runs through a cp.async pipeline of `stages` buffers, each
// BLOCK_K = 8*k_steps channels deep. CTAs are persistent: each walks work
// items (bin, row block, channel block) in a grid-stride order and the
// pipeline runs straight across item boundaries, so the loads of the next
// item overlap the last k-steps and the epilogue of the current one (K is
// only 64..128 here: a pipeline refilled per item would spend much of its
// time filling).
//
// Where the time goes: the 3-product split on mma.sync is bound by issue
// and latency, not by memory. Each mma comes with several more issued
// instructions (operand splits, the FP32 adds, copy addressing), and warps
// mostly stall on fixed-latency dependencies, so the tensor pipe is idle
// much of the time (ncu profiles: docs/performance.md). Where the kernel
// beats cuBLAS: spectral_gemm_pays (src/kernels/spectral_gemm.cu).
//
// Matrix roles for mma.m16n8k8 (row.col): A (16x8, rows = output channels,
// cols = k) is conj(filter)^T, B (8x8, rows = k, cols = GEMM rows m) is the
// input spectrum, C (16x8) is output[o][m]. The filter is stored [k][o], i.e.
// A column-major, and the input [k][m], i.e. B row-major: the fragments are
// gathered from shared memory with 8-byte loads (ldmatrix does not apply to
// 32-bit elements in these orientations).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/kernels/async_copy.cuh"
#include "fftconv/detail/kernels/spectral_gemm.hpp"
#include "fftconv/detail/kernels/tf32_split.cuh"
#include "fftconv/detail/kernels/warpgroup_spectral_gemm.hpp"

namespace fftconv::detail {
namespace spectral_gemm_impl {

// ---------------------------------------------------------------- numerics

__device__ __forceinline__ std::uint32_t negate_tf32(std::uint32_t bits) { return bits ^ 0x80000000u; }

// mma.m16n8k8 fragments (PTX ISA, "Matrix Fragments for mma.m16n8k8", tf32).
// With lane = 4*group + quad:
//   A: a[0] = (row group, col quad)   a[1] = (row group+8, col quad)
//      a[2] = (row group, col quad+4) a[3] = (row group+8, col quad+4)
//   B: b[0] = (row quad, col group)   b[1] = (row quad+4, col group)
//   C: c[0], c[1] = (row group, cols 2*quad, 2*quad+1)
//      c[2], c[3] = (row group+8, cols 2*quad, 2*quad+1)
struct a_fragment {
    std::uint32_t reg[4];
};
struct b_fragment {
    std::uint32_t reg[2];
};
struct c_fragment {
    float reg[4];
};

// d = a*b: the product chain of a k-step starts from zero (see the header).
__device__ __forceinline__ void mma_from_zero(c_fragment& d, const a_fragment& a, const b_fragment& b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%10,%10,%10};"
        : "=f"(d.reg[0]), "=f"(d.reg[1]), "=f"(d.reg[2]), "=f"(d.reg[3])
        : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]), "r"(b.reg[0]), "r"(b.reg[1]),
          "f"(0.0f));
}

// d += a*b inside the tensor core: only within one k-step's chain.
__device__ __forceinline__ void mma_chain(c_fragment& d, const a_fragment& a, const b_fragment& b) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d.reg[0]), "+f"(d.reg[1]), "+f"(d.reg[2]), "+f"(d.reg[3])
        : "r"(a.reg[0]), "r"(a.reg[1]), "r"(a.reg[2]), "r"(a.reg[3]), "r"(b.reg[0]), "r"(b.reg[1]));
}

// The filter fragment of one warp for one k-step, split: conj(w) = wr - i*wi,
// so the imaginary part enters the real output with + and the imaginary
// output with -; the negated copies let every chain use plain mma adds.
struct filter_operands {
    a_fragment re_big, re_small;
    a_fragment im_big, im_small;
    a_fragment neg_im_big, neg_im_small;
};

// The input fragment of one 8-row n-tile for one k-step, split.
struct input_operands {
    b_fragment re_big, re_small;
    b_fragment im_big, im_small;
};

__device__ __forceinline__ filter_operands split_filter(const float2 (&w)[4]) {
    filter_operands f;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const tf32_pair re = split_tf32(w[i].x);
        const tf32_pair im = split_tf32(w[i].y);
        f.re_big.reg[i] = re.big;
        f.re_small.reg[i] = re.small;
        f.im_big.reg[i] = im.big;
        f.im_small.reg[i] = im.small;
        f.neg_im_big.reg[i] = negate_tf32(im.big);
        f.neg_im_small.reg[i] = negate_tf32(im.small);
    }
    return f;
}

__device__ __forceinline__ input_operands split_input(const float2 (&x)[2]) {
    input_operands in;
#pragma unroll
    for (int i = 0; i < 2; ++i) {
        const tf32_pair re = split_tf32(x[i].x);
        const tf32_pair im = split_tf32(x[i].y);
        in.re_big.reg[i] = re.big;
        in.re_small.reg[i] = re.small;
        in.im_big.reg[i] = im.big;
        in.im_small.reg[i] = im.small;
    }
    return in;
}

// ------------------------------------------------------------ configuration

// warps_o x warps_m warps, each 16 output channels x 8*frags_m rows; a
// pipeline of `stages` buffers of 8*k_steps channels; __launch_bounds__ asks
// for min_blocks CTAs per SM (the register cap follows from it).
template <int warps_o_, int warps_m_, int frags_m_, int k_steps_, int stages_, int min_blocks_>
struct gemm_tiling {
    static constexpr int warps_o = warps_o_;
    static constexpr int warps_m = warps_m_;
    static constexpr int frags_m = frags_m_;
    static constexpr int k_steps = k_steps_;
    static constexpr int stages = stages_;
    static constexpr int min_blocks = min_blocks_;

    static constexpr int threads = 32 * warps_o * warps_m;
    static constexpr int block_o = 16 * warps_o;
    static constexpr int block_m = 8 * frags_m * warps_m;
    static constexpr int block_k = 8 * k_steps;
    // Row pitches in float2. Fragment loads read, per half warp, 4 k-rows x 4
    // consecutive columns of 8-byte elements; a pitch of 4 (mod 16) or 12
    // (mod 16) elements puts those 16 loads in 16 distinct 8-byte bank pairs.
    // block_o and block_m are multiples of 8, so "+ 4" does it; it also keeps
    // every row 16-byte aligned for cp.async and leaves the 2 extra columns
    // that the shifted input copies need (input_copy::shifted_pairs).
    static constexpr int filter_pitch = block_o + 4;
    static constexpr int input_pitch = block_m + 4;
    static constexpr int filter_stage_elements = block_k * filter_pitch;
    static constexpr int input_stage_elements = block_k * input_pitch;
    static constexpr int shared_bytes = stages * (filter_stage_elements + input_stage_elements) * 8;

    static_assert(stages >= 2, "the pipeline needs a buffer to load while one is used");
    static_assert(block_k % 2 == 0, "shifted input copies need even tile starts");
    static_assert(shared_bytes <= 227 * 1024, "one CTA's buffers exceed the SM's shared memory");
};

// How the input tile is copied (chosen on the host from the layout).
enum class input_copy : int {
    pairs,          // even rows: every channel row starts 16-byte aligned; 16-byte copies
    shifted_pairs,  // odd rows: odd channel rows start 8 bytes past alignment; their
                    // 16-byte copies start one element early, so the tile row is
                    // shifted right by one column (fragments read column m + (k & 1))
    elements,       // anything else (odd bin stride, misaligned base): 8-byte copies
};

// Runtime description of the work, computed on the host.
struct work_layout {
    int row_blocks;      // ceil(rows / block_m)
    int channel_blocks;  // ceil((last_out - first_out) / block_o)
    int items;           // bins * row_blocks * channel_blocks
    int k_tiles;         // ceil(in_channels / block_k)
    input_copy input_mode;
    bool filter_copy_16;  // channel rows of the filter start 16-byte aligned
    bool output_store_16;
};

// Where a work item sits: item = (bin * row_blocks + row_block) *
// channel_blocks + channel_block, channel blocks innermost so that the CTAs
// that run at the same time share one bin's input rows in L2.
struct item_position {
    std::int64_t bin;
    int row0;    // first GEMM row
    int out0;    // first output channel (absolute)
};

__device__ __forceinline__ item_position locate(int item, const work_layout& layout,
                                                const spectral_gemm_args& args, int block_m, int block_o) {
    const int channel_block = item % layout.channel_blocks;
    const int rest = item / layout.channel_blocks;
    const int row_block = rest % layout.row_blocks;
    const int bin = rest / layout.row_blocks;
    return {bin, row_block * block_m, int(args.first_out) + channel_block * block_o};
}

// ------------------------------------------------------------ tile copies

// Which elements of a block_k x `columns` tile one thread copies: a fixed
// column unit (2 elements = 16 bytes, or 1 = 8 bytes) in rows row, row +
// rows_per_sweep, ... Lanes are assigned per row in a power of two so that
// each sweep moves a whole number of rows: the global address then advances
// by a constant per sweep, and the shared address by a compile-time offset
// (why: recomputing row and column by division for every copy issues ~30%
// more instructions on the 256^2 K16 C128 GEMM).
template <int columns, int elements_per_copy, int block_k_, int threads>
struct copy_pattern {
    static constexpr int block_k = block_k_;
    static constexpr int units = (columns + elements_per_copy - 1) / elements_per_copy;  // copies per row
    static constexpr int lanes_per_row = units <= 1 ? 1 : units <= 2 ? 2 : units <= 4 ? 4 : units <= 8 ? 8
                                       : units <= 16 ? 16 : units <= 32 ? 32 : units <= 64 ? 64 : 128;
    static_assert(lanes_per_row >= units && lanes_per_row <= threads, "tile row too wide for the CTA");
    static constexpr int rows_per_sweep = threads / lanes_per_row;
    static constexpr int sweeps = (block_k + rows_per_sweep - 1) / rows_per_sweep;
};

// One thread's share of one operand's copies for the current work item.
struct copy_lane {
    const float2* row_start;  // this thread's first source element in channel row 0 of the item's bin
    int row;                  // first tile row this thread copies (its other rows: + rows_per_sweep)
    int column;               // tile column (element) this thread copies to
    int column_bytes;         // bytes of the copy that lie inside the matrix: 16, 8 or 0
    bool active;              // the column lies inside the tile (lanes past its width idle)
};

// Enqueue one operand's tile rows [k0, k0 + block_k); rows past `rows_total`
// (channels past in_channels) and columns past the matrix are zero-filled,
// since a stale k row would add into every output. whole_k_tiles: the caller
// knows at compile time that every tile lies inside rows_total (a static
// channel count that is a multiple of block_k), so the row bound folds away;
// the copies are the same.
template <class Pattern, int elements_per_copy, int pitch, bool whole_k_tiles>
__device__ __forceinline__ void copy_tile(float2* tile, const copy_lane& lane, std::int64_t row_stride, int k0,
                                          int rows_total, const float2* safe_source) {
    if (!lane.active) return;
    const int rows_left = rows_total - k0 - lane.row;  // rows of this tile this thread may read
    const float2* source = lane.row_start + (k0 + lane.row) * row_stride;
    float2* destination = tile + lane.row * pitch + lane.column;
#pragma unroll
    for (int sweep = 0; sweep < Pattern::sweeps; ++sweep) {
        const int tile_row = sweep * Pattern::rows_per_sweep;
        if constexpr (Pattern::block_k % Pattern::rows_per_sweep != 0)
            if (lane.row + tile_row >= Pattern::block_k) break;
        const bool inside = (whole_k_tiles || tile_row < rows_left) && lane.column_bytes > 0;
        // An out-of-range copy reads nothing (source size 0) and zero-fills;
        // it still gets an address inside the allocation.
        const float2* from = inside ? source + tile_row * row_stride : safe_source;
        const int bytes = inside ? lane.column_bytes : 0;
        if constexpr (elements_per_copy == 2)
            copy_16(destination + tile_row * pitch, from, bytes);
        else
            copy_8(destination + tile_row * pitch, from, bytes);
    }
}

// ------------------------------------------------------------ the kernel

// StaticInChannels > 0: the contraction depth (args.in_channels, which the
// host launcher has checked equal to it) is this compile-time constant, and
// so are the k-tile count and, where it divides into whole tiles, the copies'
// row bounds. 0: both come from args and layout at run time. The arithmetic
// and its order are the same either way (bit-identical results).
template <class tiling, int StaticInChannels>
__global__ void __launch_bounds__(tiling::threads, tiling::min_blocks)
    spectral_gemm_kernel(const spectral_gemm_args args, const work_layout layout) {
    static_assert(StaticInChannels >= 0, "StaticInChannels: 0 (read from args) or the channel count");
    constexpr bool static_channels = StaticInChannels > 0;
    constexpr bool whole_k_tiles = static_channels && StaticInChannels % tiling::block_k == 0;
    extern __shared__ __align__(16) float2 shared[];
    float2* const filter_stages = shared;
    float2* const input_stages = shared + tiling::stages * tiling::filter_stage_elements;

    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    const int group = lane / 4;  // fragment row/column index (see the fragment table)
    const int quad = lane % 4;
    const int warp_o = (warp % tiling::warps_o) * 16;
    const int warp_m = (warp / tiling::warps_o) * (8 * tiling::frags_m);

    const int rows = int(args.rows);
    const int in_channels = static_channels ? StaticInChannels : int(args.in_channels);
    const int k_tiles =
        static_channels ? (StaticInChannels + tiling::block_k - 1) / tiling::block_k : layout.k_tiles;
    const int last_out = int(args.last_out);

    using filter_copy_16 = copy_pattern<tiling::block_o, 2, tiling::block_k, tiling::threads>;
    using filter_copy_8 = copy_pattern<tiling::block_o, 1, tiling::block_k, tiling::threads>;
    using input_copy_16 = copy_pattern<tiling::block_m, 2, tiling::block_k, tiling::threads>;
    // Shifted copies cover block_m + 1 elements starting one early.
    using input_copy_shifted = copy_pattern<tiling::block_m + 2, 2, tiling::block_k, tiling::threads>;
    using input_copy_8 = copy_pattern<tiling::block_m, 1, tiling::block_k, tiling::threads>;
    // A thread's copy rows then all have its first row's parity, so its
    // shift is one per thread.
    static_assert(input_copy_shifted::rows_per_sweep % 2 == 0, "shifted copies need an even row step");

    // Shifted input tiles: channel row k holds row m at column m + (k & 1).
    // The fragment rows a thread reads are quad and quad + 4: same parity.
    const int input_shift = layout.input_mode == input_copy::shifted_pairs ? (quad & 1) : 0;

    // This CTA's items are blockIdx.x, blockIdx.x + gridDim.x, ...; its
    // pipeline walks (item, k_tile) pairs in that order.
    const int my_items = blockIdx.x < layout.items ? (layout.items - 1 - blockIdx.x) / gridDim.x + 1 : 0;
    const int total_tiles = my_items * k_tiles;

    // ---- producer: the copies of one (item, k_tile) into a buffer
    int load_item = blockIdx.x;
    int load_k_tile = 0;
    copy_lane filter_lane{}, input_lane{};
    // Per item: where this thread's columns start and how much of them is
    // inside the matrix (a 16-byte copy straddles the end of an odd range).
    auto start_item = [&] {
        const item_position at = locate(load_item, layout, args, tiling::block_m, tiling::block_o);
        {
            const int per_copy = layout.filter_copy_16 ? 2 : 1;
            const int lanes = layout.filter_copy_16 ? filter_copy_16::lanes_per_row : filter_copy_8::lanes_per_row;
            filter_lane.row = int(threadIdx.x) / lanes;
            filter_lane.column = int(threadIdx.x) % lanes * per_copy;
            filter_lane.active = filter_lane.column < tiling::block_o;
            const int out = at.out0 + filter_lane.column;
            filter_lane.column_bytes = filter_lane.active ? 8 * max(0, min(per_copy, last_out - out)) : 0;
            filter_lane.row_start = args.filter + at.bin * args.filter_bin_stride + (filter_lane.active ? out : 0);
        }
        {
            const bool shifted = layout.input_mode == input_copy::shifted_pairs;
            const int per_copy = layout.input_mode == input_copy::elements ? 1 : 2;
            const int lanes = shifted ? input_copy_shifted::lanes_per_row
                            : per_copy == 2 ? input_copy_16::lanes_per_row : input_copy_8::lanes_per_row;
            const int tile_columns = shifted ? tiling::block_m + 2 : tiling::block_m;
            input_lane.row = int(threadIdx.x) / lanes;
            input_lane.column = int(threadIdx.x) % lanes * per_copy;
            input_lane.active = input_lane.column < tile_columns;
            // Odd channel rows (odd rows per channel) start 8 bytes past a
            // 16-byte boundary: copy from one element earlier. The extra
            // element (row0 - 1, or the previous channel's last row when
            // row0 = 0) lies in the bin and lands in column 0, which no
            // fragment of that row reads.
            const int first = at.row0 + input_lane.column - (shifted ? (input_lane.row & 1) : 0);
            input_lane.column_bytes = input_lane.active ? 8 * max(0, min(per_copy, rows - first)) : 0;
            input_lane.row_start = args.input + at.bin * args.input_bin_stride + (input_lane.active ? first : 0);
        }
    };
    auto load_tile = [&](int buffer) {
        if (load_k_tile == 0) start_item();
        const int k0 = load_k_tile * tiling::block_k;
        float2* const filter_tile = filter_stages + buffer * tiling::filter_stage_elements;
        float2* const input_tile = input_stages + buffer * tiling::input_stage_elements;
        if (layout.filter_copy_16)
            copy_tile<filter_copy_16, 2, tiling::filter_pitch, whole_k_tiles>(
                filter_tile, filter_lane, args.out_channels, k0, in_channels, args.filter);
        else
            copy_tile<filter_copy_8, 1, tiling::filter_pitch, whole_k_tiles>(
                filter_tile, filter_lane, args.out_channels, k0, in_channels, args.filter);
        switch (layout.input_mode) {
            case input_copy::pairs:
                copy_tile<input_copy_16, 2, tiling::input_pitch, whole_k_tiles>(input_tile, input_lane, rows, k0,
                                                                                in_channels, args.input);
                break;
            case input_copy::shifted_pairs:
                copy_tile<input_copy_shifted, 2, tiling::input_pitch, whole_k_tiles>(input_tile, input_lane, rows, k0,
                                                                                     in_channels, args.input);
                break;
            default:
                copy_tile<input_copy_8, 1, tiling::input_pitch, whole_k_tiles>(input_tile, input_lane, rows, k0,
                                                                               in_channels, args.input);
        }
        if (++load_k_tile == k_tiles) {
            load_k_tile = 0;
            load_item += gridDim.x;
        }
    };

    // ---- consumer state: FP32 accumulators of the real and imaginary parts
    c_fragment acc_re[tiling::frags_m], acc_im[tiling::frags_m];
    auto zero_accumulators = [&] {
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n)
#pragma unroll
            for (int r = 0; r < 4; ++r) acc_re[n].reg[r] = acc_im[n].reg[r] = 0.0f;
    };
    zero_accumulators();

    // One 8-deep k-step on a buffer: per n-tile, two chains of 6 mma started
    // from zero, then added to the accumulators in FP32.
    auto k_step = [&](const float2* filter_tile, const float2* input_tile) {
        // Filter fragment: A(row o, col k) = filter[k][o] (see the table).
        const float2* w = filter_tile + quad * tiling::filter_pitch + warp_o + group;
        const float2 w_values[4] = {w[0], w[8], w[4 * tiling::filter_pitch], w[4 * tiling::filter_pitch + 8]};
        const filter_operands f = split_filter(w_values);

        input_operands x[tiling::frags_m];
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            const float2* p = input_tile + quad * tiling::input_pitch + warp_m + 8 * n + group + input_shift;
            const float2 x_values[2] = {p[0], p[4 * tiling::input_pitch]};
            x[n] = split_input(x_values);
        }

        // Real part: wr*xr + wi*xi. Imaginary part: wr*xi - wi*xr. The small
        // cross terms go first so that they are summed among themselves
        // before the large big*big products join the chain. Each product
        // group is issued across all n-tiles before the next, giving the
        // tensor pipe 2*frags_m independent chains.
        c_fragment part_re[tiling::frags_m], part_im[tiling::frags_m];
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            mma_from_zero(part_re[n], f.re_small, x[n].re_big);
            mma_from_zero(part_im[n], f.re_small, x[n].im_big);
        }
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            mma_chain(part_re[n], f.re_big, x[n].re_small);
            mma_chain(part_im[n], f.re_big, x[n].im_small);
        }
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            mma_chain(part_re[n], f.im_small, x[n].im_big);
            mma_chain(part_im[n], f.neg_im_small, x[n].re_big);
        }
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            mma_chain(part_re[n], f.im_big, x[n].im_small);
            mma_chain(part_im[n], f.neg_im_big, x[n].re_small);
        }
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            mma_chain(part_re[n], f.re_big, x[n].re_big);
            mma_chain(part_im[n], f.re_big, x[n].im_big);
        }
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            mma_chain(part_re[n], f.im_big, x[n].im_big);
            mma_chain(part_im[n], f.neg_im_big, x[n].re_big);
        }
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n)
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                acc_re[n].reg[r] += part_re[n].reg[r];
                acc_im[n].reg[r] += part_im[n].reg[r];
            }
    };

    // Writes the accumulators of the item just finished (C fragment rows are
    // output channels, columns GEMM rows; a thread holds 2 adjacent rows of 2
    // channels per n-tile: one 16-byte store each where aligned).
    auto store_item = [&](const item_position& at) {
        float2* const output_bin = args.output + at.bin * args.output_bin_stride;
#pragma unroll
        for (int n = 0; n < tiling::frags_m; ++n) {
            const int row = at.row0 + warp_m + 8 * n + 2 * quad;
#pragma unroll
            for (int half = 0; half < 2; ++half) {
                const int out = at.out0 + warp_o + group + 8 * half;
                if (out >= last_out || row >= rows) continue;
                const float2 first = make_float2(acc_re[n].reg[2 * half], acc_im[n].reg[2 * half]);
                const float2 second = make_float2(acc_re[n].reg[2 * half + 1], acc_im[n].reg[2 * half + 1]);
                float2* const destination = output_bin + std::int64_t(out) * rows + row;
                if (layout.output_store_16 && row + 1 < rows) {
                    *reinterpret_cast<float4*>(destination) = make_float4(first.x, first.y, second.x, second.y);
                } else {
                    destination[0] = first;
                    if (row + 1 < rows) destination[1] = second;
                }
            }
        }
    };

    // ---- the pipeline: stages-1 tiles in flight ahead of the one computed.
#pragma unroll
    for (int s = 0; s < tiling::stages - 1; ++s) {
        if (s < total_tiles) load_tile(s);
        commit_copies();  // an empty group when there is nothing left keeps the count uniform
    }

    int compute_item = blockIdx.x;
    int compute_k_tile = 0;
    int buffer = 0;
    for (int t = 0; t < total_tiles; ++t) {
        wait_copies<tiling::stages - 2>();  // tile t has landed (for this thread's copies)
        __syncthreads();                    // ... for everyone's, and tile t-1's buffer is free
        {
            const int next = t + tiling::stages - 1;
            int next_buffer = buffer + tiling::stages - 1;
            if (next_buffer >= tiling::stages) next_buffer -= tiling::stages;
            if (next < total_tiles) load_tile(next_buffer);
            commit_copies();
        }
        const float2* filter_tile = filter_stages + buffer * tiling::filter_stage_elements;
        const float2* input_tile = input_stages + buffer * tiling::input_stage_elements;
#pragma unroll
        for (int s = 0; s < tiling::k_steps; ++s) {
            // A step wholly past the depth (in a last, partial k-tile) would
            // multiply zero-filled rows: skip it (at depth 196 in 16-deep
            // tiles, 25 steps instead of 26).
            if (s > 0 && compute_k_tile * tiling::block_k + 8 * s >= in_channels) break;
            k_step(filter_tile + 8 * s * tiling::filter_pitch, input_tile + 8 * s * tiling::input_pitch);
        }

        if (++compute_k_tile == k_tiles) {
            store_item(locate(compute_item, layout, args, tiling::block_m, tiling::block_o));
            zero_accumulators();
            compute_k_tile = 0;
            compute_item += gridDim.x;
        }
        if (++buffer == tiling::stages) buffer = 0;
    }
    wait_copies<0>();  // leave no copy in flight into shared memory at exit
}

// ------------------------------------------------------------ host side

inline bool aligned_16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

// Launch options a measurement driver varies; the library uses the defaults.
struct launch_options {
    int grid_limit = 0;  // 0: one persistent wave (SMs x occupancy); else at most this many CTAs
};

template <class tiling>
work_layout work_layout_of(const spectral_gemm_args& a) {
    work_layout layout{};
    layout.row_blocks = int((a.rows + tiling::block_m - 1) / tiling::block_m);
    layout.channel_blocks = int((a.last_out - a.first_out + tiling::block_o - 1) / tiling::block_o);
    const std::int64_t items = a.bins * layout.row_blocks * layout.channel_blocks;
    if (items > std::int64_t{1} << 30) throw_invalid("spectral_gemm: too many work items for one launch");
    layout.items = int(items);
    layout.k_tiles = int((a.in_channels + tiling::block_k - 1) / tiling::block_k);
    // 16-byte copies need every copied pair 16-byte aligned: an aligned base,
    // even bin strides, and (block offsets being multiples of 8) even row
    // starts: for the input, even rows, or odd rows with the shifted copy.
    const bool input_aligned = aligned_16(a.input) && a.input_bin_stride % 2 == 0;
    layout.input_mode = !input_aligned ? input_copy::elements
                      : a.rows % 2 == 0 ? input_copy::pairs : input_copy::shifted_pairs;
    layout.filter_copy_16 = aligned_16(a.filter) && a.filter_bin_stride % 2 == 0 &&
                            a.out_channels % 2 == 0 && a.first_out % 2 == 0;
    layout.output_store_16 = aligned_16(a.output) && a.output_bin_stride % 2 == 0 && a.rows % 2 == 0;
    return layout;
}

// StaticInChannels > 0 needs a.in_channels == StaticInChannels (checked by
// spectral_gemm_static, the caller).
template <class tiling, int StaticInChannels = 0>
void launch_tiled(const spectral_gemm_args& a, cudaStream_t stream, const launch_options& options) {
    const work_layout layout = work_layout_of<tiling>(a);
    if (layout.items == 0 || layout.k_tiles == 0) return;
    const auto kernel = spectral_gemm_kernel<tiling, StaticInChannels>;
    FFTCONV_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                          tiling::shared_bytes));
    int grid_limit = options.grid_limit;
    if (grid_limit <= 0) {
        int device = 0, sms = 0, per_sm = 0;
        FFTCONV_CUDA_TRY(cudaGetDevice(&device));
        FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
        FFTCONV_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, tiling::threads,
                                                                       tiling::shared_bytes));
        grid_limit = sms * std::max(per_sm, 1);
    }
    const int grid = std::min(layout.items, grid_limit);
    launch_unrecorded(kernel, grid, tiling::threads, tiling::shared_bytes, stream, a, layout);
}

// Rows per warp: the n-tile count (8 rows each) from 4..max_frags that wastes
// the fewest padded rows over the row blocks; ties go to the larger tile
// (fewer blocks re-reading the filter).
inline int choose_frags_m(std::int64_t rows, int warps_m, int max_frags) {
    const std::int64_t tiles = (rows + 7) / 8;
    int best = max_frags;
    std::int64_t best_padded = -1;
    for (int f = max_frags; f >= 4; --f) {
        const std::int64_t per_block = std::int64_t{f} * warps_m;
        const std::int64_t padded = (tiles + per_block - 1) / per_block * per_block;
        if (best_padded < 0 || padded < best_padded) {
            best = f;
            best_padded = padded;
        }
    }
    return best;
}

template <int warps_o, int warps_m, int k_steps, int stages, int min_blocks, int StaticInChannels = 0>
void launch_frags(const spectral_gemm_args& a, cudaStream_t stream, int frags_m, const launch_options& options = {}) {
    constexpr int C = StaticInChannels;
    switch (frags_m) {
        case 4: return launch_tiled<gemm_tiling<warps_o, warps_m, 4, k_steps, stages, min_blocks>, C>(a, stream, options);
        case 5: return launch_tiled<gemm_tiling<warps_o, warps_m, 5, k_steps, stages, min_blocks>, C>(a, stream, options);
        case 6: return launch_tiled<gemm_tiling<warps_o, warps_m, 6, k_steps, stages, min_blocks>, C>(a, stream, options);
        default: return launch_tiled<gemm_tiling<warps_o, warps_m, 7, k_steps, stages, min_blocks>, C>(a, stream, options);
    }
}

}  // namespace spectral_gemm_impl

// The argument ranges spectral_gemm.hpp documents; throws throw_invalid.
inline void check_spectral_gemm_args(const spectral_gemm_args& a) {
    if (a.rows < 1 || a.in_channels < 1 || a.bins < 0 || a.first_out < 0 || a.last_out > a.out_channels ||
        a.first_out > a.last_out || a.input_bin_stride < a.in_channels * a.rows ||
        a.filter_bin_stride < a.in_channels * a.out_channels || a.output_bin_stride < a.last_out * a.rows ||
        a.rows > (std::int64_t{1} << 30) || a.in_channels > (std::int64_t{1} << 30) ||
        a.out_channels > (std::int64_t{1} << 30))
        throw_invalid("spectral_gemm: arguments out of range");
}

// check_spectral_gemm_args, and for StaticInChannels > 0 that the arguments'
// depth is that count; throws throw_invalid.
template <int StaticInChannels>
void check_static_spectral_gemm_args(const spectral_gemm_args& a) {
    static_assert(StaticInChannels >= 0 && StaticInChannels <= (1 << 30),
                  "StaticInChannels: 0 (read from args) or the input-channel count");
    check_spectral_gemm_args(a);
    if constexpr (StaticInChannels > 0)
        if (a.in_channels != StaticInChannels)
            throw_invalid("spectral_gemm: in_channels = " + std::to_string(a.in_channels) +
                          ", but this instantiation is compiled for " + std::to_string(StaticInChannels));
}

// The mma.sync kernel alone (any device of compute capability 8.0 or more),
// with the contraction depth fixed at compile time: StaticInChannels > 0
// accepts only args.in_channels == StaticInChannels (throw_invalid
// otherwise) and computes bit for bit what StaticInChannels = 0 (depth from
// args) computes. Any shape, alignment and output range; throws
// fftconv::error on a launch failure or arguments out of range.
template <int StaticInChannels>
void spectral_gemm_warp_level(const spectral_gemm_args& a, cudaStream_t stream) {
    using namespace spectral_gemm_impl;
    check_static_spectral_gemm_args<StaticInChannels>(a);
    if (a.bins == 0 || a.first_out == a.last_out) return;
    // 4 warps x 16 channels, 16-deep k tiles in 3 buffers, persistent CTAs;
    // 2 CTAs per SM with up to 255 registers each. Over the leaderboard
    // GEMMs on the H200 that is faster than 4 buffers, 32-deep tiles in 2
    // buffers, one CTA per item, or 3 CTAs per SM at 168 registers (which
    // spills a little and leaves the compiler less room to overlap the mma
    // chains): docs/performance.md. Ranges of up to 32 channels stay with
    // cuBLAS (spectral_gemm_pays): a 2-warp, 32-channel CTA for them gave
    // wrong output on the H200 (channels [32, 64) of 64) and is not built
    // until that is understood.
    launch_frags<4, 1, 2, 3, 2, StaticInChannels>(a, stream, choose_frags_m(a.rows, 1, 7));
}

// spectral_gemm (spectral_gemm.hpp) for a configuration: on an sm_90 device
// (where the library holds its code) the wgmma kernel,
// warpgroup_spectral_gemm.hpp, which reads the depth at run time; elsewhere
// spectral_gemm_warp_level<StaticInChannels>. Either way every
// StaticInChannels computes bit for bit what spectral_gemm computes on the
// same device, and the same contract holds.
template <int StaticInChannels>
void spectral_gemm_static(const spectral_gemm_args& a, cudaStream_t stream) {
    check_static_spectral_gemm_args<StaticInChannels>(a);
    if (a.bins == 0 || a.first_out == a.last_out) return;
    if (warpgroup_spectral_gemm_runs(a)) {
        warpgroup_spectral_gemm(a, stream);
        return;
    }
    spectral_gemm_warp_level<StaticInChannels>(a, stream);
}

}  // namespace fftconv::detail
