// src/backward/depthwise_filter_gradient.cu — see depthwise_filter_gradient.hpp.
//
// Kernel 1, one block per (output channel, split of its sample x block
// positions): two positions q, q + 1 at a time; one 64-thread group
// transforms their two windows of xpad (z = window_q + i window_q+1), the
// other their two dy blocks, by forward 2D FFTs in shared memory and
// registers (fused_tile_fft.cuh's stages); then each thread adds
// X_q conj(D_q) + X_q+1 conj(D_q+1) at its 17 bins of the half spectrum to
// registers, at most max_split_positions of them (float sums of more terms
// miss the 1e-6 bar, by up to 4x on hundreds of positions). The
// partial sums go to scratch. Kernel 2 adds each (channel, bin)'s splits in
// double, in a fixed order (deterministic). Kernel 3, one block per output
// channel: the full grid by Hermitian symmetry, the inverse FFT, the
// Kh x Kw crop written to dw.
//
// Why windows pair with windows and blocks with blocks, not a window with
// its dy block in one transform: the split of a pair's spectrum rounds
// both halves to the larger one's magnitude, and in training dy is often
// orders of magnitude smaller than x (pairing them misses the 1e-6 bar by up
// to 4x even on equal-scale random inputs).
//
// With A = Z[k] and M = Z[-k], the pair's halves are 2 P = A + conj(M) and
// 2 Q = -i (A - conj(M)); the 1/4 of the two halves' product and the
// inverse's 1/T^2 are applied once, in kernel 2.
//
// A non-finite value in x or dy makes its output channel's whole filter
// gradient non-finite (the transforms spread it over the channel's taps);
// other channels are untouched.
#include "backward/depthwise_filter_gradient.hpp"

#include <algorithm>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/kernels/fused_tile_fft.cuh"
#include "backward/gradient_positions.hpp"

namespace fftconv::detail {

namespace {

constexpr int tile = gradient_tile;  // 64
constexpr int pitch = tile + 1, freq_cols = tile / 2 + 1, bins = tile * freq_cols;
constexpr int dy_tile = tile_family_of(tile).tile_stride();  // where the block's second tile (dy's) starts
constexpr int groups = tile_family_of(tile).pairs, threads = tile_family_of(tile).threads();  // 2 tiles, 128 threads
constexpr int owned_bins = (bins + threads - 1) / threads;                // per thread: 17
static_assert(groups == 2, "kernel 1 holds a windows tile and a dy-blocks tile");

// Blocks of kernel 1 to aim for: enough to fill the H200's 132 SMs at 3
// blocks each several times over; fewer splits leave SMs idle when there
// are few channels, more make kernel 2 read more partial sums. No split
// sums more than max_split_positions positions in float.
constexpr std::int64_t target_blocks = 2048, max_split_positions = 16;

struct gradient_geometry {
    gradient_positions at;
    std::int64_t multiplier, kernel_height, kernel_width;
    std::int64_t per_split, splits;  // positions per split (even), splits per channel
    std::int64_t first_out;          // the launch's output channel 0

};

gradient_geometry geometry_of(const problem& p) {
    gradient_geometry g{};
    g.at = positions_of(p);
    g.multiplier = p.out_channels / p.in_channels;
    g.kernel_height = p.kernel.height;
    g.kernel_width = p.kernel.width;
    // Splits of an even number of positions (two per iteration), none empty.
    const std::int64_t positions = g.at.count();
    const std::int64_t wanted = std::clamp<std::int64_t>(target_blocks / p.out_channels, 1, (positions + 1) / 2);
    g.per_split = std::min(max_split_positions, ceil_div(ceil_div(positions, wanted), 2) * 2);
    g.splits = ceil_div(positions, g.per_split);
    return g;
}

// Blocks per SM: 3, as many as the 66.5 KB of shared memory allows (3
// rather than 2 is faster on the H200 for the forward depthwise kernel:
// docs/performance.md).
__global__ void __launch_bounds__(threads, 3)
    accumulate_products(gradient_geometry g, const float* __restrict__ x, const float* __restrict__ dy,
                        float2* __restrict__ partial) {
    extern __shared__ float2 shared[];
    __shared__ pair_largest<threads, tile> largest_of;  // pair 0: x's windows q, q + 1; pair 1: dy's blocks
    const int lane = threadIdx.x, group = threadIdx.y, linear = group * tile + lane;
    float2* z = shared + group * tile_family_of(tile).tile_stride();  // group 0: windows of xpad; group 1: dy blocks
    const std::int64_t o = g.first_out + blockIdx.x / g.splits, split = blockIdx.x % g.splits;
    const std::int64_t begin = split * g.per_split, end = min(begin + g.per_split, g.at.count());

    float2 sum[owned_bins];
#pragma unroll
    for (int j = 0; j < owned_bins; ++j) sum[j] = float2{0.0f, 0.0f};

    // Group 0 reads input channel c's windows of xpad, group 1 channel o's
    // dy blocks, at positions q and q + 1 (empty past `end`).
    const std::int64_t c = o / g.multiplier;
    auto window = [&](const gradient_positions::place& at, std::int64_t q) {
        return q >= end ? tile_window{} : group == 0 ? g.at.x_window(c, at) : g.at.dy_block(o, at);
    };
    gradient_positions::place at = g.at.place_of(begin);
#pragma unroll 1
    for (std::int64_t first = begin; first < end; first += 2) {
        const gradient_positions::place second = g.at.next(at);
        const tile_window wa = window(at, first), wb = window(second, first + 1);
        // Positions q and q + 1 of two samples: each window (block) is
        // scaled to magnitude ~1 before the shared transform, and each
        // product taken back by its window's and block's factors. Of one
        // sample they are two windows of one image, which need none (as an
        // image's tiles in the forward pass: fused_tile_fft.cuh).
        const bool balance = at.b != second.b && first + 1 < end;
        at = g.at.next(second);
        float2 largest;
        load_pair<tile>(z, lane, group == 0 ? x : dy, wa, wb, 1.0f, largest);
        if (balance) largest_of.add(linear, largest);
        __syncthreads();
        const pair_scale of_x = balance ? largest_of.scale(0) : pair_scale{};
        const pair_scale of_dy = balance ? largest_of.scale(1) : pair_scale{};
        const pair_scale& own = group == 0 ? of_x : of_dy;
        const float back_q = of_x.out.x * of_dy.out.x, back_next = of_x.out.y * of_dy.out.y;
        // Rows, then columns: two transposing passes over one FFT body.
        // Rows outside both windows are zero, and so is their FFT (a dy
        // block's rows past 65 - K).
        bool live = lane >= first_window_row(wa, wb) && lane < max(wa.rows, wb.rows);
#pragma unroll 1
        for (int pass = 0; pass < 2; ++pass) {
            float2 v[tile];
            read_row<tile>(z, lane, v);
            if (pass == 0 && own.active)
#pragma unroll
                for (int k = 0; k < tile; ++k) v[k] = scaled(v[k], own.in);
            tile_sync<tile>(group);  // every row is in registers before the columns overwrite them
            if (live) {
                fft_in_registers<tile, false>(v);
                write_column<tile>(z, lane, v);
            } else {
                for (int r = 0; r < tile; ++r) z[r * pitch + lane] = float2{0.0f, 0.0f};
            }
            live = true;
            tile_sync<tile>(group);
        }
        __syncthreads();  // the products read both tiles
#pragma unroll
        for (int j = 0; j < owned_bins; ++j) {
            const int bin = linear + j * threads;
            if (bin >= bins) break;
            const int r = bin / freq_cols, s = bin % freq_cols;
            const int at = r * pitch + s, mirror = ((tile - r) % tile) * pitch + (tile - s) % tile;
            const float2 ax = shared[at], mx = shared[mirror];                           // windows
            const float2 ad = shared[dy_tile + at], md = shared[dy_tile + mirror];  // dy blocks
            const float2 x0{ax.x + mx.x, ax.y - mx.y}, x1{ax.y + mx.y, mx.x - ax.x};  // 2 X_q, 2 X_q+1
            const float2 d0{ad.x + md.x, ad.y - md.y}, d1{ad.y + md.y, md.x - ad.x};  // 2 D_q, 2 D_q+1
            sum[j].x += back_q * (x0.x * d0.x + x0.y * d0.y) + back_next * (x1.x * d1.x + x1.y * d1.y);  // 4 X conj(D)
            sum[j].y += back_q * (x0.y * d0.x - x0.x * d0.y) + back_next * (x1.y * d1.x - x1.x * d1.y);
        }
        __syncthreads();  // z is loaded again
    }
    float2* out = partial + blockIdx.x * std::int64_t(bins);
#pragma unroll
    for (int j = 0; j < owned_bins; ++j) {
        const int bin = linear + j * threads;
        if (bin < bins) out[bin] = sum[j];
    }
}

// Each (channel, bin)'s splits summed in double and scaled, into the
// channel's first split (each thread reads and writes only its own).
__global__ void sum_splits(gradient_geometry g, float2* __restrict__ partial, std::int64_t total) {
    constexpr double scale = 1.0 / (4.0 * tile * tile);
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        float2* sums = partial + t / bins * g.splits * bins + t % bins;
        double x = 0.0, y = 0.0;
        for (std::int64_t k = 0; k < g.splits; ++k) {
            const float2 part = sums[k * bins];
            x += part.x;
            y += part.y;
        }
        sums[0] = float2{float(scale * x), float(scale * y)};
    }
}

// One block (one 64-thread group) per output channel.
__global__ void __launch_bounds__(tile) inverse_to_filter(gradient_geometry g, const float2* __restrict__ partial,
                                                          float* __restrict__ dw) {
    __shared__ float2 z[tile * pitch];
    const int lane = threadIdx.x;
    const std::int64_t o = g.first_out + blockIdx.x;
    const float2* sums = partial + blockIdx.x * g.splits * bins;
    for (int bin = lane; bin < bins; bin += tile) {
        const float2 total = sums[bin];
        const int r = bin / freq_cols, s = bin % freq_cols;
        z[r * pitch + s] = total;
        if (s > 0 && s < tile / 2) z[((tile - r) % tile) * pitch + (tile - s)] = float2{total.x, -total.y};
    }
    __syncthreads();
    transform_row<tile, true>(z, lane);
    __syncthreads();
    if (lane >= g.kernel_width) return;
    float2 v[tile];
    transform_column<tile, true>(z, lane, v);
    const bool column_sees = tap_sees_input(lane, g.at.out_width, g.at.pad_width, g.at.width);
#pragma unroll
    for (int k = 0; k < tile; ++k) {
        if (k < g.kernel_height) {  // v[k] is row k
            const bool sees = column_sees && tap_sees_input(k, g.at.out_height, g.at.pad_height, g.at.height);
            dw[(o * g.kernel_height + k) * g.kernel_width + lane] = sees ? v[k].x : 0.0f;
        }
    }
}

// Output channels per launch: all, unless their partial sums pass the
// budget (many positions per channel, e.g. a large batch of small outputs).
std::int64_t channels_per_launch(const problem& p, const gradient_geometry& g, std::int64_t budget) {
    return std::clamp<std::int64_t>(budget / (g.splits * bins * std::int64_t(sizeof(float2))), 1, p.out_channels);
}

}  // namespace

bool fits_depthwise_filter_gradient(const problem& p) { return p.group_in_channels() == 1 && fits_gradient_tile(p); }

std::size_t depthwise_filter_gradient_scratch(const problem& p, std::int64_t budget) {
    const gradient_geometry g = geometry_of(p);
    return sizeof(float2) * std::size_t(channels_per_launch(p, g, budget) * g.splits * bins);
}

void depthwise_filter_gradient(engine& e, const problem& p, const float* x, const float* dy, float* dw,
                               void* scratch, std::int64_t budget) {
    gradient_geometry g = geometry_of(p);
    auto* partial = static_cast<float2*>(scratch);
    allow_shared_bytes(accumulate_products, tile_family_of(tile).shared_bytes());
    const std::int64_t step = channels_per_launch(p, g, budget);
    for (g.first_out = 0; g.first_out < p.out_channels; g.first_out += step) {
        const std::int64_t channels = std::min(step, p.out_channels - g.first_out);
        launch(accumulate_products, unsigned(channels * g.splits), dim3(tile, groups),
               tile_family_of(tile).shared_bytes(), e.stream(), g, x, dy, partial);
        const std::int64_t sums = channels * bins;
        launch(sum_splits, grid_stride_blocks(sums, 256), 256, 0, e.stream(), g, partial, sums);
        launch(inverse_to_filter, unsigned(channels), tile, 0, e.stream(), g, partial, dw);
    }
}

}  // namespace fftconv::detail
