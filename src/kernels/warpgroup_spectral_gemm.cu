// src/kernels/warpgroup_spectral_gemm.cu — the spectral GEMM on wgmma (sm_90a):
// interface and why in include/fftconv/detail/kernels/warpgroup_spectral_gemm.hpp;
// the product and its accuracy scheme in spectral_gemm.hpp / spectral_gemm.cuh.
//
// Geometry. A CTA is one warpgroup (4 warps, 128 threads) and computes 64
// output channels x `columns` GEMM rows (tiles) of one bin, `columns` a
// multiple of 8 up to 64 chosen per call so that the row blocks pad the
// fewest rows (50 rows: one block of 56). wgmma's D (64 x columns) is
// output channel x row; its A = conj(filter)^T comes from registers: each
// warp its 16 output channels, read from the filter tile in shared memory and
// split there (TF32 operands in shared memory must be K-major, and the filter
// is stored output-channel-major); its B = the input tile, split once per CTA
// into four K-major TF32 tiles (real big / small, imaginary big / small) in
// the no-swizzle core-matrix layout (8 rows x 16 bytes per core matrix).
//
// Numerics as in the mma.sync kernel: every operand split into big + small
// TF32 parts (tf32_split.cuh), three products per real product (small*big,
// big*small, big*big, small terms first), each 8-deep k-step's chain started
// from zero inside the tensor core (wgmma's scale-d = 0) and added to FP32
// accumulators outside it. The imaginary part's -wi comes from wgmma's
// scale-a = -1, not from negated copies.
//
// Pipeline: input channels in chunks of 16 (two k-steps) through `stages`
// cp.async buffers of both raw operands and two split buffers: a chunk's 24
// wgmma run while the CTA splits the next chunk and issues its copies, then
// they are waited for and added.
//
// Where the time goes (H200, ncu, 256^2 K16 C128 B2's GEMM halves;
// docs/performance.md): bound by issue latency, not by the tensor pipe or
// memory. At 247 registers two CTAs (8 warps) fit an SM, and a warp issues an
// instruction every ~5 cycles (shared-memory and fixed-latency dependencies)
// across ~570 instructions a chunk: the operand splits, the FP32 adds, copies.
#include "fftconv/detail/kernels/warpgroup_spectral_gemm.hpp"

#include <atomic>
#include <climits>
#include <cstdint>

#include "fftconv/detail/kernels/async_copy.cuh"
#include "fftconv/detail/kernels/tf32_split.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"

namespace fftconv::detail {
namespace warpgroup_gemm_impl {

constexpr int warpgroup_threads = 128;
constexpr int block_out = 64;        // wgmma's M: output channels of a CTA
constexpr int chunk_channels = 16;   // input channels of a pipeline stage: two 8-deep k-steps
constexpr int stages = 4;
constexpr int filter_pitch = block_out + 4;  // float2s a filter-tile row; 4 (mod 16): conflict-free A loads
constexpr int max_columns = 64;

template <int columns>
struct tile_layout {
    static_assert(columns % 8 == 0 && columns >= 8 && columns <= max_columns, "wgmma's N: 8, 16, ..., 64 here");
    // float2s an input-tile row: 4 or 12 (mod 16), so a split pass's 8-byte
    // loads (4 channels x 8 rows a warp) hit distinct banks.
    static constexpr int input_pitch = columns + 4;
    static constexpr int filter_stage = chunk_channels * filter_pitch;  // float2s
    static constexpr int input_stage = chunk_channels * input_pitch;
    // One split part (real big, real small, imaginary big, imaginary small)
    // of one k-step: `columns` rows x 8 TF32 words as core matrices, the
    // word of (row, k) at (row / 8) * 64 + (k / 4) * 32 + (row % 8) * 4 + k % 4.
    static constexpr int part_words = columns * 8;
    static constexpr int chunk_split_words = 2 * 4 * part_words;  // two k-steps of four parts
    static constexpr int split_words = 2 * chunk_split_words;      // two chunks: one in use, one being split
    static constexpr int shared_bytes = split_words * 4 + stages * (filter_stage + input_stage) * 8;
    // Accumulators and the two k-steps' chains: 3 x columns floats a thread;
    // three CTAs an SM (at most 168 registers) where that spills nothing.
    static constexpr int min_blocks = columns <= 32 ? 3 : 2;
};

struct work_grid {
    int row_blocks;  // ceil(rows / columns)
    int out_blocks;  // ceil((last_out - first_out) / 64)
    int chunks;      // ceil(in_channels / 16)
    bool output_store_16;  // a thread's two adjacent rows may be stored as one 16-byte value
    bool copy_pairs;       // every operand row starts 16-byte aligned: 16-byte copies of element pairs
};

// ---------------------------------------------------------------- wgmma

// The shared-memory matrix descriptor of a K-major, unswizzled operand tile in
// the core-matrix layout above: the next core matrix along k is 128 bytes on
// (leading byte offset), the next 8 rows 256 bytes on (stride byte offset).
// Fields in 16-byte units: start address bits 0-13, leading offset 16-29,
// stride offset 32-45; swizzle mode (bits 62-63) 0: none.
__device__ __forceinline__ std::uint64_t core_matrix_descriptor(const std::uint32_t* tile) {
    const auto address = static_cast<std::uint32_t>(__cvta_generic_to_shared(tile));
    constexpr std::uint64_t leading = 128 >> 4, stride = 256 >> 4;
    return std::uint64_t((address >> 4) & 0x3fffu) | leading << 16 | stride << 32;
}

__device__ __forceinline__ void warpgroup_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void warpgroup_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void warpgroup_wait_all() { asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory"); }
// Makes this thread's ordinary shared-memory stores visible to wgmma's reads
// (the async proxy); a barrier then makes everyone's.
__device__ __forceinline__ void shared_stores_to_async_proxy() {
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
// Keeps the compiler from moving uses of wgmma's accumulators across the
// wait: the registers are written asynchronously, which it cannot see.
template <int n>
__device__ __forceinline__ void pin_registers(float (&r)[n]) {
#pragma unroll
    for (int i = 0; i < n; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// d (+)= sign * a * b for a 64 x N x 8 step: a the warpgroup's A fragment in
// registers (the mma.m16n8k8 TF32 layout per warp, warp w rows 16w..16w+15),
// b a descriptor, accumulate = 0 ignores d's old value (a chain's start).
template <int N>
struct warpgroup_mma;

template <>
struct warpgroup_mma<8> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[4], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %9, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3}, "
                     "{%4, %5, %6, %7}, %8, p, %10, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

template <>
struct warpgroup_mma<16> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[8], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n16k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7}, "
                     "{%8, %9, %10, %11}, %12, p, %14, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

template <>
struct warpgroup_mma<24> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[12], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %17, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n24k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11}, "
                     "{%12, %13, %14, %15}, %16, p, %18, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

template <>
struct warpgroup_mma<32> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[16], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n32k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
                     "{%16, %17, %18, %19}, %20, p, %22, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

template <>
struct warpgroup_mma<40> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[20], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %25, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n40k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19}, "
                     "{%20, %21, %22, %23}, %24, p, %26, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

template <>
struct warpgroup_mma<48> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[24], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %29, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n48k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23}, "
                     "{%24, %25, %26, %27}, %28, p, %30, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

template <>
struct warpgroup_mma<56> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[28], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %33, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n56k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27}, "
                     "{%28, %29, %30, %31}, %32, p, %34, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

template <>
struct warpgroup_mma<64> {
    template <int sign>
    static __device__ __forceinline__ void run(float (&d)[32], const std::uint32_t (&a)[4], std::uint64_t b,
                                               int accumulate) {
        asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                     "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
                     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                     "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                     "{%32, %33, %34, %35}, %36, p, %38, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate), "n"(sign)
            : "memory");
    }
};

// ---------------------------------------------------------------- the kernel

template <int columns>
__global__ void __launch_bounds__(warpgroup_threads, tile_layout<columns>::min_blocks)
    warpgroup_gemm_kernel(const spectral_gemm_args args, const work_grid grid) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    using layout = tile_layout<columns>;
    using mma = warpgroup_mma<columns>;
    constexpr int fragment = columns / 2;  // accumulator floats a thread holds of one 64 x columns tile
    extern __shared__ __align__(128) unsigned char shared[];
    std::uint32_t* const split = reinterpret_cast<std::uint32_t*>(shared);
    float2* const filter_stages = reinterpret_cast<float2*>(shared + layout::split_words * 4);
    float2* const input_stages = filter_stages + stages * layout::filter_stage;

    const int item = int(blockIdx.x);
    const int row0 = item % grid.row_blocks * columns;
    const int out0 = int(args.first_out) + item / grid.row_blocks % grid.out_blocks * block_out;
    const std::int64_t bin = item / grid.row_blocks / grid.out_blocks;
    const int rows = int(args.rows);
    const int in_channels = int(args.in_channels);
    const int last_out = int(args.last_out);
    const float2* const filter_bin = args.filter + bin * args.filter_bin_stride;
    const float2* const input_bin = args.input + bin * args.input_bin_stride;
    const int warp = int(threadIdx.x) / 32;
    const int group = int(threadIdx.x) % 32 / 4;  // fragment row (see warpgroup_mma)
    const int quad = int(threadIdx.x) % 4;

    // Channels past the depth, output channels past the range and rows past
    // the bin's are zero-filled: a stale value in a k row would add into
    // every output. With copy_pairs (the usual layouts) each thread copies
    // fixed columns of fixed rows of every chunk, so its sources step by a
    // chunk's rows and its copies differ by compile-time offsets: 4 filter
    // and up to 4 input copies of 16 bytes a chunk.
    const int filter_unit = int(threadIdx.x) % 32, filter_row = int(threadIdx.x) / 32;  // rows + 4r
    const int filter_bytes = 8 * max(0, min(2, last_out - (out0 + 2 * filter_unit)));
    const int input_lane = int(threadIdx.x) % 8, input_row = int(threadIdx.x) / 8;      // units + 8j
    constexpr int input_units = columns / 2, input_sweeps = (input_units + 7) / 8;
    const std::int64_t filter_row_step = 4 * args.out_channels;  // elements
    // The next chunk's first source element of this thread (load_chunk runs
    // for chunks 0, 1, 2, ... in order).
    const float2* filter_cursor = filter_bin + filter_row * args.out_channels + out0 + 2 * filter_unit;
    const float2* input_cursor = input_bin + std::int64_t(input_row) * rows + row0 + 2 * input_lane;
    auto load_chunk = [&](int chunk) {
        const int k0 = chunk * chunk_channels;
        float2* const filter_tile = filter_stages + chunk % stages * layout::filter_stage;
        float2* const input_tile = input_stages + chunk % stages * layout::input_stage;
        if (grid.copy_pairs) {
            const float2* from = filter_cursor;
            float2* to = filter_tile + filter_row * filter_pitch + 2 * filter_unit;
#pragma unroll
            for (int r = 0; r < chunk_channels / 4; ++r) {
                const int bytes = k0 + filter_row + 4 * r < in_channels ? filter_bytes : 0;
                copy_16(to, bytes ? from : args.filter, bytes);
                from += filter_row_step;
                to += 4 * filter_pitch;
            }
            filter_cursor = from;
            const bool input_channel = k0 + input_row < in_channels;
#pragma unroll
            for (int j = 0; j < input_sweeps; ++j) {
                const int unit = input_lane + 8 * j;
                if (unit >= input_units) break;
                const int bytes = input_channel ? 8 * max(0, min(2, rows - (row0 + 2 * unit))) : 0;
                copy_16(input_tile + input_row * layout::input_pitch + 2 * unit,
                        bytes ? input_cursor + 16 * j : args.input, bytes);
            }
            input_cursor += std::int64_t(chunk_channels) * rows;
            return;
        }
#pragma unroll 1
        for (int r = 0; r < chunk_channels * block_out / warpgroup_threads; ++r) {
            const int i = int(threadIdx.x) + r * warpgroup_threads;
            const int k = i / block_out, o = i % block_out;
            const bool inside = k0 + k < in_channels && out0 + o < last_out;
            copy_8(filter_tile + k * filter_pitch + o,
                   inside ? filter_bin + std::int64_t(k0 + k) * args.out_channels + out0 + o : args.filter,
                   inside ? 8 : 0);
        }
#pragma unroll 1
        for (int r = 0; r < chunk_channels * columns / warpgroup_threads; ++r) {
            const int i = int(threadIdx.x) + r * warpgroup_threads;
            const int k = i / columns, n = i % columns;
            const bool inside = k0 + k < in_channels && row0 + n < rows;
            copy_8(input_tile + k * layout::input_pitch + n,
                   inside ? input_bin + std::int64_t(k0 + k) * rows + row0 + n : args.input, inside ? 8 : 0);
        }
    };

    // The chunk's input tile, split, into the four parts of each k-step of
    // its split buffer. Warp w takes channels 4w .. 4w + 3 of the chunk (k-step
    // w / 2, k half w % 2) and walks the row groups: a pass is 4 channels x 8
    // rows, 32 consecutive words of each part (conflict-free), at addresses
    // that step by constants.
    const float2* const split_source_lane = input_stages + (4 * warp + quad) * layout::input_pitch + group;
    const int split_target_lane = (warp / 2) * 4 * layout::part_words + (warp % 2) * 32 + int(threadIdx.x) % 32;
    auto split_input = [&](int chunk) {
        const float2* const source = split_source_lane + chunk % stages * layout::input_stage;
        std::uint32_t* const target = split + chunk % 2 * layout::chunk_split_words + split_target_lane;
#pragma unroll
        for (int row_group = 0; row_group < columns / 8; ++row_group) {
            const float2 x = source[8 * row_group];
            const tf32_pair re = split_tf32(x.x), im = split_tf32(x.y);
            std::uint32_t* const word = target + row_group * 64;
            word[0] = re.big;
            word[layout::part_words] = re.small;
            word[2 * layout::part_words] = im.big;
            word[3 * layout::part_words] = im.small;
        }
        shared_stores_to_async_proxy();
    };

    // This warp's A fragment of one k-step (the mma.m16n8k8 layout: rows
    // 16w + group (+ 8), channels quad (+ 4)), split.
    struct filter_fragment {
        std::uint32_t re_big[4], re_small[4], im_big[4], im_small[4];
    };
    auto load_filter = [&](const float2* filter_rows) {
        const float2* const w = filter_rows + quad * filter_pitch + 16 * warp + group;
        const float2 values[4] = {w[0], w[8], w[4 * filter_pitch], w[4 * filter_pitch + 8]};
        filter_fragment f;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const tf32_pair re = split_tf32(values[i].x), im = split_tf32(values[i].y);
            f.re_big[i] = re.big;
            f.re_small[i] = re.small;
            f.im_big[i] = im.big;
            f.im_small[i] = im.small;
        }
        return f;
    };

    // One 8-deep k-step's products: conj(w) x, real part wr*xr + wi*xi,
    // imaginary part wr*xi - wi*xr, each a chain of 6 wgmma started from zero
    // (small cross terms first, as in the mma.sync kernel).
    auto issue_k_step = [&](const filter_fragment& f, const std::uint32_t* parts, float (&re)[fragment],
                            float (&im)[fragment]) {
        const std::uint64_t x_re_big = core_matrix_descriptor(parts);
        const std::uint64_t x_re_small = core_matrix_descriptor(parts + layout::part_words);
        const std::uint64_t x_im_big = core_matrix_descriptor(parts + 2 * layout::part_words);
        const std::uint64_t x_im_small = core_matrix_descriptor(parts + 3 * layout::part_words);
        mma::template run<1>(re, f.re_small, x_re_big, 0);
        mma::template run<1>(im, f.re_small, x_im_big, 0);
        mma::template run<1>(re, f.re_big, x_re_small, 1);
        mma::template run<1>(im, f.re_big, x_im_small, 1);
        mma::template run<1>(re, f.im_small, x_im_big, 1);
        mma::template run<-1>(im, f.im_small, x_re_big, 1);
        mma::template run<1>(re, f.im_big, x_im_small, 1);
        mma::template run<-1>(im, f.im_big, x_re_small, 1);
        mma::template run<1>(re, f.re_big, x_re_big, 1);
        mma::template run<1>(im, f.re_big, x_im_big, 1);
        mma::template run<1>(re, f.im_big, x_im_big, 1);
        mma::template run<-1>(im, f.im_big, x_re_big, 1);
    };

    float acc_re[fragment], acc_im[fragment];
    float first_re[fragment], first_im[fragment], second_re[fragment], second_im[fragment];  // the two k-steps' chains
#pragma unroll
    for (int i = 0; i < fragment; ++i)
        acc_re[i] = acc_im[i] = first_re[i] = first_im[i] = second_re[i] = second_im[i] = 0.0f;

    // The pipeline. Chunk c's wgmma run while the CTA waits for chunk c + 1's
    // copies and splits it into the other split buffer; only then are they
    // waited for and added. Raw stage c % stages is free once chunk c's
    // filter fragments are in registers (its input was split one chunk
    // earlier), so it takes chunk c + stages.
#pragma unroll
    for (int s = 0; s < stages; ++s) {
        if (s < grid.chunks) load_chunk(s);
        commit_copies();  // an empty group past the end keeps the count uniform
    }
    wait_copies<stages - 1>();  // chunk 0 has landed (this thread's copies) ...
    __syncthreads();            // ... everyone's
    split_input(0);
    __syncthreads();
    for (int chunk = 0; chunk < grid.chunks; ++chunk) {
        const float2* const filter_tile = filter_stages + chunk % stages * layout::filter_stage;
        const std::uint32_t* const parts = split + chunk % 2 * layout::chunk_split_words;
        // A second step wholly past the depth would multiply zero rows.
        const bool second = chunk * chunk_channels + 8 < in_channels;
        const filter_fragment f0 = load_filter(filter_tile);
        filter_fragment f1{};
        if (second) f1 = load_filter(filter_tile + 8 * filter_pitch);
        pin_registers(first_re);
        pin_registers(first_im);
        pin_registers(second_re);
        pin_registers(second_im);
        warpgroup_fence();
        issue_k_step(f0, parts, first_re, first_im);
        if (second) issue_k_step(f1, parts + 4 * layout::part_words, second_re, second_im);
        warpgroup_commit();

        wait_copies<stages - 2>();  // chunk + 1 has landed (this thread's copies) ...
        __syncthreads();            // ... everyone's; everyone holds chunk's filter fragments
        if (chunk + 1 < grid.chunks) split_input(chunk + 1);
        if (chunk + stages < grid.chunks) load_chunk(chunk + stages);
        commit_copies();

        warpgroup_wait_all();
        pin_registers(first_re);
        pin_registers(first_im);
        pin_registers(second_re);
        pin_registers(second_im);
#pragma unroll
        for (int i = 0; i < fragment; ++i) {
            acc_re[i] += first_re[i];
            acc_im[i] += first_im[i];
        }
        if (second)
#pragma unroll
            for (int i = 0; i < fragment; ++i) {
                acc_re[i] += second_re[i];
                acc_im[i] += second_im[i];
            }
        __syncthreads();  // chunk + 1's split parts are complete for the next wgmma
    }
    wait_copies<0>();  // no copy left in flight into shared memory at exit

    // D fragment: per 8-column block j, d[4j], d[4j+1] at (channel 16w + group,
    // rows 8j + 2 quad, + 1) and d[4j+2], d[4j+3] at channel + 8.
    float2* const output_bin = args.output + bin * args.output_bin_stride;
#pragma unroll
    for (int j = 0; j < columns / 8; ++j)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int out = out0 + 16 * warp + group + 8 * half;
            const int row = row0 + 8 * j + 2 * quad;
            if (out >= last_out || row >= rows) continue;
            const int d = 4 * j + 2 * half;
            float2* const destination = output_bin + std::int64_t(out) * rows + row;
            if (grid.output_store_16 && row + 1 < rows) {
                *reinterpret_cast<float4*>(destination) =
                    make_float4(acc_re[d], acc_im[d], acc_re[d + 1], acc_im[d + 1]);
            } else {
                destination[0] = make_float2(acc_re[d], acc_im[d]);
                if (row + 1 < rows) destination[1] = make_float2(acc_re[d + 1], acc_im[d + 1]);
            }
        }
#else
    // Compiled without sm_90a: warpgroup_spectral_gemm_runs is false there.
    (void)args;
    (void)grid;
    __trap();
#endif
}

// Row blocks of at most 64 rows, as few as that allows, each of the same
// width (a multiple of 8): 50 rows -> one block of 56; 104 -> two of 56.
struct call_shape {
    work_grid grid;
    int columns;
    std::int64_t items;
};

call_shape shape_of(const spectral_gemm_args& a) {
    call_shape s{};
    const std::int64_t row_blocks = (a.rows + max_columns - 1) / max_columns;
    const std::int64_t per_block = (a.rows + row_blocks - 1) / row_blocks;
    s.columns = int((per_block + 7) / 8 * 8);
    s.grid.row_blocks = int((a.rows + s.columns - 1) / s.columns);
    s.grid.out_blocks = int((a.last_out - a.first_out + block_out - 1) / block_out);
    s.grid.chunks = int((a.in_channels + chunk_channels - 1) / chunk_channels);
    s.grid.output_store_16 = reinterpret_cast<std::uintptr_t>(a.output) % 16 == 0 &&
                             a.output_bin_stride % 2 == 0 && a.rows % 2 == 0;
    // Tile rows start at multiples of 8 rows and of 64 output channels past
    // first_out: 16-byte aligned where the bases, strides and these are even.
    s.grid.copy_pairs = reinterpret_cast<std::uintptr_t>(a.input) % 16 == 0 && a.input_bin_stride % 2 == 0 &&
                        a.rows % 2 == 0 && reinterpret_cast<std::uintptr_t>(a.filter) % 16 == 0 &&
                        a.filter_bin_stride % 2 == 0 && a.out_channels % 2 == 0 && a.first_out % 2 == 0;
    s.items = a.bins * s.grid.row_blocks * s.grid.out_blocks;
    return s;
}

template <int columns>
void launch_columns(const spectral_gemm_args& a, const call_shape& s, cudaStream_t stream) {
    const auto kernel = warpgroup_gemm_kernel<columns>;
    constexpr int bytes = tile_layout<columns>::shared_bytes;
    allow_shared_bytes(kernel, bytes);
    launch_unrecorded(kernel, dim3(unsigned(s.items)), dim3(warpgroup_threads), bytes, stream, a, s.grid);
}

}  // namespace warpgroup_gemm_impl

#if FFTCONV_WARPGROUP_GEMM
namespace {

// Whether the current device is compute capability 9.0, asked of the
// runtime once per device (every forward GEMM launch asks twice: the
// routing and the launch).
bool current_device_is_sm90() {
    int device = 0;
    FFTCONV_CUDA_TRY(cudaGetDevice(&device));
    constexpr int remembered = 64;  // devices past these are asked every time
    static std::atomic<signed char> known[remembered] = {};  // 0: not asked, 1: yes, -1: no
    if (device >= 0 && device < remembered) {
        const signed char answer = known[device].load(std::memory_order_relaxed);
        if (answer != 0) return answer > 0;
    }
    int major = 0, minor = 0;
    FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    const bool sm90 = major == 9 && minor == 0;
    if (device >= 0 && device < remembered) known[device].store(sm90 ? 1 : -1, std::memory_order_relaxed);
    return sm90;
}

}  // namespace
#endif

bool warpgroup_spectral_gemm_runs(const spectral_gemm_args& a) {
#if FFTCONV_WARPGROUP_GEMM
    if (!current_device_is_sm90()) return false;
    // Row blocks and rows index with int; the grid's x extent is < 2^31.
    return a.rows <= INT_MAX && a.in_channels <= INT_MAX && a.last_out <= INT_MAX &&
           (a.bins == 0 || warpgroup_gemm_impl::shape_of(a).items <= INT_MAX);
#else
    (void)a;
    return false;
#endif
}

// H200, L2 flushed (docs/performance.md, d3): the kernel's 8-row tiles win
// from 32 input channels at any row count (128^2 K8 C64 B1's 26 rows: 18.4
// against cuBLAS's 23.1 us) and lose below (16 channels: 17.8 against 16.5);
// ranges of 32 channels compute half padding (10.7 against cuBLAS's 11.6 us
// at 64^2 K8 C32 B2).
bool warpgroup_spectral_gemm_pays(const spectral_gemm_args& a) {
    return a.in_channels >= 32 && a.last_out - a.first_out > 32;
}

void warpgroup_spectral_gemm(const spectral_gemm_args& a, cudaStream_t stream) {
    const warpgroup_gemm_impl::call_shape s = warpgroup_gemm_impl::shape_of(a);
    if (s.items == 0 || s.grid.chunks == 0) return;
    switch (s.columns) {
        case 8: return warpgroup_gemm_impl::launch_columns<8>(a, s, stream);
        case 16: return warpgroup_gemm_impl::launch_columns<16>(a, s, stream);
        case 24: return warpgroup_gemm_impl::launch_columns<24>(a, s, stream);
        case 32: return warpgroup_gemm_impl::launch_columns<32>(a, s, stream);
        case 40: return warpgroup_gemm_impl::launch_columns<40>(a, s, stream);
        case 48: return warpgroup_gemm_impl::launch_columns<48>(a, s, stream);
        case 56: return warpgroup_gemm_impl::launch_columns<56>(a, s, stream);
        default: return warpgroup_gemm_impl::launch_columns<64>(a, s, stream);
    }
}

}  // namespace fftconv::detail
