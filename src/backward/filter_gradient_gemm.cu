// src/backward/filter_gradient_gemm.cu — see filter_gradient_gemm.hpp.
//
// Per chunk of positions [first, first + count): x's tile n = q * x_slots +
// g * cg_slots + c (input channel c of group g), dy's n = q * dy_slots + o
// (q the position within the chunk; cg_slots and dy_slots the group's input
// channels and the output channels rounded up to even, the spare slot an
// empty tile), so X is [bin][q][g][c] and D [bin][q][o] (one buffer: per
// bin D, then X; one launch transforms both), and a transform pair is two
// positions of one channel on the 32-point grid, two channels of one
// position on the 64-point one (chunk_tiles). Per bin and group the GEMM
//   out[o][c] = sum_q X_c[q] conj(D_o[q])     (c within o's group)
// leaves out [bin][o][c_slot], c_slot < cg_slots (the group's input channels
// rounded up to even, the spare slot zero), so the inverse transform's tile
// n = o * cg_slots + c writes dw[o][c] in place and its pairs are (c, c ^ 1)
// of one output channel. Non-finite values: one in x's channel c reaches
// dw[:, c] whole (the transforms spread it over the taps) and at most
// dw[:, c ^ 1] besides (the inverse pairs, and the transform pairs on 64
// points); one in dy's channel o reaches dw[o], and on 64 points at most
// dw[o ^ 1] besides. Chunks after the first are summed in
// double (sum_chunks): their count grows with batch x blocks. D carries the
// inverse's 1/T^2.
//
// The GEMM: with one group, our split-TF32 tensor-core kernel
// (spectral_gemm.hpp: input X, rows = x_slots; filter D, its out channels
// dy_slots; output [o][row]) where it pays, else cuBLAS's FP32 CGEMM (FFMA,
// never TF32: the engine's math mode), out = X D^H per bin and group.
#include "backward/filter_gradient_gemm.hpp"

#include <algorithm>
#include <climits>
#include <cmath>

#include <cublas_v2.h>

#include "fftconv/config.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/kernels/fused_tile_fft.cuh"
#include "fftconv/detail/kernels/spectral_gemm.hpp"
#include "fftconv/detail/kernels/spectral_gemm.cuh"
#include "fftconv/detail/kernels/warpgroup_spectral_gemm.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"
#include "backward/gradient_positions.hpp"

namespace fftconv::detail {

namespace {


// Positions per GEMM at most. A chunk's GEMM sums its depth in float, so
// capping the depth keeps the rounding of a deep sum (batch x blocks can
// reach thousands) near that of a hundred terms; chunks are summed in
// double. cuBLAS's FFMA GEMM: 128 (at 512 the 32-point grid's random sweep
// reaches relative L2 7.4e-7 and an element at 0.99 of its tolerance,
// against 4.3e-7 and 0.25 on the 64-point grid). The tensor-core GEMM
// starts every 8-deep step from zero and adds the steps in float, 8 times
// fewer sequential adds than a depth's FFMA chain: 256.
constexpr std::int64_t max_chunk_ffma = 128, max_chunk_tensor = 256;

constexpr std::int64_t round_up(std::int64_t n, std::int64_t multiple) { return ceil_div(n, multiple) * multiple; }

// Channel slots per position: a group's input channels rounded up to even
// (group), all groups' (x), the output channels rounded up to even (dy).
struct channel_slots {
    std::int64_t group, x, dy;
};
constexpr channel_slots slots_of(const problem& p) {
    const std::int64_t group = round_up(p.group_in_channels(), 2);
    return {group, p.groups * group, round_up(p.out_channels, 2)};
}

// Whether the tensor-core GEMM takes p's products at a full chunk's depth
// (each chunk's own depth is checked again: spectral_gemm_pays).
bool tensor_gemm(const problem& p) {
    spectral_gemm_args a{};
    a.rows = slots_of(p).x;
    a.in_channels = max_chunk_tensor;
    a.out_channels = a.last_out = p.out_channels;
    return p.groups == 1 && spectral_gemm_pays(a);
}

constexpr std::int64_t bins_of(int tile) { return std::int64_t{tile} * (tile / 2 + 1); }

// Modelled time (ns, at ncu's clocks) of the path on a grid of `tile`
// points: the transforms of x's windows and dy's blocks, the GEMM, the
// inverse transforms and, with several chunks, their double sums. The
// figures are the kernels' on the H200 (ncu at 128^2 K16 C64 B4,
// docs/performance.md): on 32 points 3.8 ps per transformed
// point, the tensor-core GEMM at 32 TFLOP/s (depth 196), 3.6 ps per inverse
// point; on 64 points 6.3 ps, 24 TFLOP/s (depth 36) and 4.35 ps; the sums
// 40 bytes per element of out and chunk (a float2 read, a double2 read and
// written) at 3 TB/s.
double modelled_ns(const problem& p, int tile, std::int64_t chunk) {
    const bool small = tile == 32;
    const double positions = double(positions_of(p, tile).count()), points = double(tile) * tile;
    const double products = double(p.group_in_channels()) * double(p.out_channels);
    const double transforms = (small ? 3.8e-3 : 6.3e-3) * points * positions * double(p.in_channels + p.out_channels);
    const double gemm = 8.0 * double(bins_of(tile)) * products * positions / (small ? 32e3 : 24e3);
    const double inverse = (small ? 3.6e-3 : 4.35e-3) * points * products;
    const double chunks = std::ceil(positions / double(chunk));
    const double sums = chunks > 1 ? 40.0 / 3e3 * chunks * double(bins_of(tile)) * products : 0.0;
    return transforms + gemm + inverse + sums;
}

// Tile n = q * slots + slot: position first + q's window of x (of_x) or
// block of dy. The slots hold channels in runs of `run` (a group's input
// channels for x, all output channels for dy) padded to `run_slots` (even:
// a transform pair never spans two runs), the spare slot an empty tile.
template <bool of_x>
struct position_tiles {
    gradient_positions at;
    const float* tensor;
    std::int64_t first, slots, run, run_slots;
    float scale;
    __device__ tile_window window(std::int64_t n) const {
        const std::int64_t q = n / slots, slot = n - q * slots, r = slot / run_slots, in_run = slot - r * run_slots;
        if (in_run >= run) return tile_window{};
        const std::int64_t channel = r * run + in_run;
        return of_x ? at.x_window(channel, first + q) : at.dy_block(channel, first + q);
    }
};

// Whether the transforms on a grid pair two positions of one channel rather
// than two channels at one position: where a block's stores of one partner
// still fill a 32-byte sector a bin (4 pairs a block at T = 32; at T = 64
// two pairs' 16 bytes measured the filter gradient 50% slower).
constexpr bool pairs_positions(int tile) { return tile_family_of(tile).pairs * sizeof(float2) >= 32; }

// A chunk's tiles in one launch: dy's blocks (tiles [0, split)), then x's
// windows. With `positions_paired` a transform pair is positions q and q + 1
// of one channel (q even within the chunk; chunks start at even positions,
// chunk_of), one slice's, balanced only where q + 1 begins another sample;
// else tiles n and n + 1 (split is even, so a pair reads one tensor), two
// channels at one position, always balanced. x's pairs record each channel
// slot's largest magnitude (float bits) in `largest`: the inverse pairs two
// input channels of dw, whose sizes follow x's.
struct chunk_tiles {
    position_tiles<false> blocks;
    position_tiles<true> windows;
    std::int64_t split;              // dy's tiles: the chunk's positions x dy's slots
    std::int64_t positions;          // the chunk's
    std::int64_t blocks_per_sample;  // positions a sample
    bool positions_paired;
    unsigned* largest;               // x_slots of them, zero before the first chunk
    __device__ tile_window window(std::int64_t n) const {
        return n < split ? blocks.window(n) : windows.window(n - split);
    }
    // Pairs of positions a channel slot has.
    FFTCONV_HOST_DEVICE std::int64_t units() const { return (positions + 1) / 2; }
};
}  // namespace
template <>
constexpr bool records_largest<chunk_tiles> = true;
namespace {

// Pair p. Paired positions: dy's pairs first (units x dy's slots of them),
// then x's; within each, unit u = p / slots (positions 2u, 2u + 1) at channel
// slot p % slots. Paired channels: tiles 2p and 2p + 1, as by default.
__device__ tile_pair pair_tiles(const chunk_tiles& source, std::int64_t pair, std::int64_t tile_count) {
    if (!source.positions_paired) {
        const std::int64_t n = 2 * pair;
        return {n, 1, n < tile_count, n + 1 < tile_count, true};
    }
    const std::int64_t dy_pairs = source.units() * source.blocks.slots;
    const bool of_x = pair >= dy_pairs;
    const std::int64_t slots = of_x ? source.windows.slots : source.blocks.slots;
    const std::int64_t local = of_x ? pair - dy_pairs : pair, unit = local / slots, q = 2 * unit;
    const bool has_first = unit < source.units(), has_second = has_first && q + 1 < source.positions;
    const bool spans = has_second && (source.blocks.first + q + 1) % source.blocks_per_sample == 0;
    return {(of_x ? source.split : 0) + q * slots + (local - unit * slots), slots, has_first, has_second, spans};
}
std::int64_t pair_count(const chunk_tiles& source, std::int64_t tile_count) {
    return source.positions_paired ? source.units() * (source.blocks.slots + source.windows.slots)
                                   : (tile_count + 1) / 2;
}
__device__ const float* tile_data(const chunk_tiles& source, std::int64_t n) {
    return n < source.split ? source.blocks.tensor : source.windows.tensor;
}
__device__ float tile_scale(const chunk_tiles& source, std::int64_t n) {
    return n < source.split ? source.blocks.scale : source.windows.scale;
}
__device__ void record_largest(const chunk_tiles& source, const tile_pair& pair, uint2 bits) {
    if (pair.first < source.split) return;
    unsigned* slot = source.largest + (pair.first - source.split) % source.windows.slots;
    if (source.positions_paired) {
        atomicMax(slot, max(bits.x, bits.y));
    } else {  // slots slot and slot + 1
        atomicMax(slot, bits.x);
        atomicMax(slot + 1, bits.y);
    }
}

// The inverse's pair (n, n + 1) = dw[o][c], dw[o][c + 1] (n = o * cg_slots +
// c, c even), scaled by x's channels c and c + 1 of o's group.
struct channel_scales {
    const unsigned* largest;
    std::int64_t cg_slots, group_out_channels, tiles;
    __device__ pair_scale of(std::int64_t n) const {
        if (n >= tiles) return pair_scale{};
        const std::int64_t o = n / cg_slots, c = n - o * cg_slots;
        const unsigned* at = largest + o / group_out_channels * cg_slots + c;
        return balancing_scale(at[0], at[1]);
    }
};

struct gemm_chunking {
    int tile;
    std::int64_t chunk, chunks;                     // positions per chunk, chunks
    std::int64_t cg_slots, x_slots, dy_slots;  // Cin/groups rounded up to even, groups x that; Cout rounded up
    std::int64_t stride, out_stride;           // bin strides of the spectra (D, then X) and of out: multiples of 4
    // The spectra at 0; the double sum only with several chunks; x's largest per channel slot.
    std::size_t out_offset, sum_offset, largest_offset, bytes;
};

// Positions per chunk on a grid: as many as the budget and max_chunk allow.
std::int64_t chunk_of(const problem& p, int tile, std::int64_t budget) {
    const channel_slots slots = slots_of(p);
    const std::int64_t per_position = bins_of(tile) * std::int64_t(sizeof(float2)) * (slots.x + slots.dy);
    const std::int64_t positions = positions_of(p, tile).count();
    std::int64_t most =
        std::min(std::max<std::int64_t>(budget / per_position, 1), tensor_gemm(p) ? max_chunk_tensor : max_chunk_ffma);
    // Chunks start at even positions where a transform pair is two
    // positions (chunk_tiles): an even chunk, unless one holds them all.
    if (pairs_positions(tile) && most < positions && most > 1) most -= most % 2;
    return std::clamp<std::int64_t>(most, 1, positions);
}

// The grid: 32 points for kernels up to 8 (blocks of 25 or more: faster than
// 64 on the H200, docs/performance.md); for kernels up to 16 (blocks of 17)
// where the tensor-core GEMM runs and the model says so (it does at 128^2
// K16 C64 B4, not at 256^2 K16 C128 B2, whose 450 positions take two
// chunks); else 64.
int tile_of(const problem& p, std::int64_t budget) {
    const std::int64_t kernel = std::max(p.kernel.height, p.kernel.width);
    if (kernel <= 8) return 32;
    if (kernel > max_blocked_kernel_on(32) || !tensor_gemm(p)) return 64;
    return modelled_ns(p, 32, chunk_of(p, 32, budget)) < modelled_ns(p, 64, chunk_of(p, 64, budget)) ? 32 : 64;
}

gemm_chunking chunking_of(const problem& p, std::int64_t budget) {
    gemm_chunking g{};
    g.tile = tile_of(p, budget);
    const std::int64_t bins = bins_of(g.tile), positions = positions_of(p, g.tile).count();
    const channel_slots slots = slots_of(p);
    g.cg_slots = slots.group;
    g.x_slots = slots.x;
    g.dy_slots = slots.dy;
    g.chunk = chunk_of(p, g.tile, budget);
    g.chunks = ceil_div(positions, g.chunk);
    g.stride = round_up((g.dy_slots + g.x_slots) * g.chunk, 4);
    g.out_stride = round_up(p.out_channels * g.cg_slots, 4);
    g.out_offset = align_up(sizeof(float2) * std::size_t(bins * g.stride));
    g.sum_offset = g.out_offset + align_up(sizeof(float2) * std::size_t(bins * g.out_stride));
    g.largest_offset =
        g.sum_offset + (g.chunks > 1 ? align_up(sizeof(double2) * std::size_t(bins * g.out_stride)) : 0);
    g.bytes = g.largest_offset + align_up(sizeof(unsigned) * std::size_t(g.x_slots));
    return g;
}

// sum (double) = out for the first chunk, sum += out after it; with `last`,
// out = sum rounded to float for the inverse transform.
__global__ void sum_chunks(float2* __restrict__ out, double2* __restrict__ sum, std::int64_t total, bool first,
                           bool last) {
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const float2 v = out[t];
        double2 s = first ? double2{0.0, 0.0} : sum[t];
        s.x += v.x;
        s.y += v.y;
        if (last) out[t] = float2{float(s.x), float(s.y)};
        else sum[t] = s;
    }
}

// out = X D^H per bin (and group) for `count` positions.
void multiply(engine& e, const problem& p, const gemm_chunking& g, std::int64_t count, const float2* xs,
              const float2* ds, float2* out) {
    const std::int64_t bins = bins_of(g.tile);
    const spectral_gemm_args args{xs, ds, out, g.x_slots, count, g.dy_slots, 0, p.out_channels, bins,
                                  g.stride, g.stride, g.out_stride};
    if (tensor_gemm(p) && spectral_gemm_pays(args)) {
        check_spectral_gemm_args(args);
        if (warpgroup_spectral_gemm_runs(args)) {
            warpgroup_spectral_gemm(args, e.stream());
            return;
        }
        // Elsewhere spectral_gemm's tiling at 3 CTAs per SM instead of 2 (168
        // registers): these GEMMs have few, deep work items (1088 of 13
        // k-tiles at 128^2 K16 C64 B4), which 396 CTAs share more evenly
        // than 264.
        spectral_gemm_impl::launch_frags<4, 1, 2, 3, 3>(args, e.stream(),
                                                         spectral_gemm_impl::choose_frags_m(args.rows, 1, 7));
        return;
    }
    const std::int64_t cg = p.group_in_channels(), og = p.group_out_channels();
    const cuComplex one{1.0f, 0.0f}, zero{0.0f, 0.0f};
    for (std::int64_t group = 0; group < p.groups; ++group)
        FFTCONV_CUBLAS_TRY(cublasCgemmStridedBatched(
            e.blas(), CUBLAS_OP_N, CUBLAS_OP_C, int(cg), int(og), int(count), &one,
            reinterpret_cast<const cuComplex*>(xs + group * g.cg_slots), int(g.x_slots), g.stride,
            reinterpret_cast<const cuComplex*>(ds + group * og), int(g.dy_slots), g.stride, &zero,
            reinterpret_cast<cuComplex*>(out + group * og * g.cg_slots), int(g.cg_slots), g.out_stride, int(bins)));
}

template <int T>
void run_gemm(engine& e, const problem& p, const float* x, const float* dy, float* dw, void* scratch,
              std::int64_t budget) {
    using geometry = tile_geometry<dynamic_extent, dynamic_extent, T>;
    constexpr std::int64_t bins = bins_of(T);
    const gemm_chunking g = chunking_of(p, budget);
    const gradient_positions at = positions_of(p, T);
    auto* base = static_cast<char*>(scratch);
    auto* spectra = reinterpret_cast<float2*>(base);  // per bin: the chunk's D, then its X
    auto* out = reinterpret_cast<float2*>(base + g.out_offset);
    auto* sum = reinterpret_cast<double2*>(base + g.sum_offset);
    auto* largest = reinterpret_cast<unsigned*>(base + g.largest_offset);
    FFTCONV_CUDA_TRY(cudaMemsetAsync(largest, 0, sizeof(unsigned) * std::size_t(g.x_slots), e.stream()));
    // cuBLAS leaves the spare input slot and the stride's padding unwritten:
    // the inverse pairs the spare slot with the group's last channel, and
    // sum_chunks reads the padding.
    if (g.cg_slots != p.group_in_channels() || g.out_stride != p.out_channels * g.cg_slots)
        FFTCONV_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(float2) * std::size_t(bins * g.out_stride), e.stream()));
    const std::int64_t cg = p.group_in_channels();
    const geometry geo(T + 1 - p.kernel.height, T + 1 - p.kernel.width, p.in_channels, p.out_channels, T);
    const float scale = 1.0f / float(T * T);
    const bool positions_paired = pairs_positions(T) && (g.chunk % 2 == 0 || g.chunks == 1);
    for (std::int64_t first = 0; first < at.count(); first += g.chunk) {
        const std::int64_t count = std::min(g.chunk, at.count() - first);
        // Both operands in one launch: neither fills the GPU alone on small
        // problems (faster on the H200 than two launches, on one stream or
        // two: docs/performance.md).
        const chunk_tiles tiles{{at, dy, first, g.dy_slots, p.out_channels, g.dy_slots, scale},
                                {at, x, first, g.x_slots, cg, g.cg_slots, 1.0f},
                                count * g.dy_slots, count, at.blocks, positions_paired, largest};
        launch_forward_tiles<geometry>(tiles, count * (g.dy_slots + g.x_slots), g.stride, spectra, e.stream());
        multiply(e, p, g, count, spectra + count * g.dy_slots, spectra, out);
        if (g.chunks > 1) {
            const std::int64_t total = bins * g.out_stride, chunk = first / g.chunk;
            launch(sum_chunks, grid_stride_blocks(total, 256), 256, 0, e.stream(),
                   out, sum, total, chunk == 0, chunk == g.chunks - 1);
        }
    }
    // Tile n = o * cg_slots + c of the gradient's spectrum -> dw[o][c]
    // (slot c = Cg, when there is one, writes nothing): image o, tile c of a
    // column of Cg tiles of Kh x Kw.
    const std::int64_t taps = p.kernel.height * p.kernel.width;
    const output_tiles<geometry> sink{geo, dw, tensor_strides{0, cg * taps, p.kernel.width},
                                      cg * p.kernel.height, p.kernel.width,
                                      tile_outputs{int(p.kernel.height), int(p.kernel.width)},
                                      tile_grid{1, 1, cg, g.cg_slots}, nullptr};
    const channel_scales scales{largest, g.cg_slots, p.group_out_channels(), p.out_channels * g.cg_slots};
    launch_inverse_tiles<geometry>(out, 0, p.out_channels * g.cg_slots, g.out_stride, sink, e.stream(), scales);
}

}  // namespace

bool fits_filter_gradient_gemm(const problem& p, std::int64_t budget) {
    if (!fits_gradient_tile(p)) return false;
    const gemm_chunking g = chunking_of(p, budget);
    // cuBLAS takes int extents and leading dimensions.
    return bins_of(g.tile) * g.out_stride * std::int64_t(sizeof(float2)) <= budget && g.x_slots <= INT_MAX &&
           g.dy_slots <= INT_MAX;
}

int filter_gradient_gemm_grid(const problem& p) { return tile_of(p, default_gradient_budget); }

std::size_t filter_gradient_gemm_scratch(const problem& p, std::int64_t budget) { return chunking_of(p, budget).bytes; }

void filter_gradient_gemm(engine& e, const problem& p, const float* x, const float* dy, float* dw, void* scratch,
                          std::int64_t budget) {
    if (tile_of(p, budget) == 32) run_gemm<32>(e, p, x, dy, dw, scratch, budget);
    else run_gemm<64>(e, p, x, dy, dw, scratch, budget);
}

}  // namespace fftconv::detail
