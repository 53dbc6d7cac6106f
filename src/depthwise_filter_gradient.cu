// src/depthwise_filter_gradient.cu — see depthwise_filter_gradient.hpp.
//
// Kernel 1, one block per (output channel, split of its sample x block
// positions): two positions at a time (one per 64-thread group), z = window
// + i dy-block, forward 2D FFT in shared memory and registers
// (fused_tile_fft.cuh's stages), then each thread adds X conj(D) at its 17
// bins of the half spectrum, for both groups, to registers. The partial sums
// go to scratch. Kernel 2, one block per output channel: the splits summed in
// a fixed order (deterministic), the full grid by Hermitian symmetry, the
// inverse FFT, the Kh x Kw crop written to dw.
//
// With A = Z[k] and B = conj(Z[-k]): X = (A + B) / 2, D = (A - B) / (2i), so
// X conj(D) = (i / 4) (A + B) conj(A - B); the 1/4 and the inverse's 1/T^2
// are applied once, in kernel 2.
//
// A non-finite value in x or dy makes its output channel's whole filter
// gradient non-finite (the transforms spread it over the channel's taps);
// other channels are untouched.
#include "depthwise_filter_gradient.hpp"

#include <algorithm>

#include "fftconv/detail/check.hpp"
#include "fftconv/detail/fused_tile_fft.cuh"
#include "gradient_operands.hpp"

namespace fftconv::detail {

namespace {

constexpr int tile = gradient_tile;  // 64
constexpr int pitch = tile + 1, freq_cols = tile / 2 + 1, bins = tile * freq_cols;
constexpr int groups = fused_pairs(tile), threads = fused_threads(tile);  // 2 positions, 128 threads
constexpr int owned_bins = (bins + threads - 1) / threads;                // per thread: 17
static_assert(groups == 2, "kernel 1 pairs two positions per block");

// Blocks of kernel 1 to aim for: enough to fill the H200's 132 SMs at 3
// blocks each several times over; fewer splits leave SMs idle when there
// are few channels, more make kernel 2 read more partial sums.
constexpr std::int64_t target_blocks = 2048;

struct gradient_geometry {
    std::int64_t batch, channels, out_channels, multiplier;
    std::int64_t height, width, out_height, out_width, pad_height, pad_width;
    std::int64_t kernel_height, kernel_width;
    std::int64_t block_rows, block_cols, blocks_wide, blocks;  // blocks per sample
    std::int64_t positions, per_split, splits;                 // positions per channel: batch x blocks

    // The window of xpad (real part) and the dy block (imaginary part) of
    // position q of output channel o.
    __device__ void windows(std::int64_t o, std::int64_t q, tile_window& wx, tile_window& wd) const {
        const std::int64_t b = q / blocks, block = q % blocks;
        const std::int64_t r0 = block / blocks_wide * block_rows, c0 = block % blocks_wide * block_cols;
        const std::int64_t y0 = r0 - pad_height, x0 = c0 - pad_width, c = o / multiplier;
        wx = {((b * channels + c) * height + y0) * width + x0, window_begin(y0, tile), window_end(y0, height, tile),
              window_begin(x0, tile), window_end(x0, width, tile), width};
        wd = {((b * out_channels + o) * out_height + r0) * out_width + c0, 0, clip(int(block_rows), out_height - r0),
              0, clip(int(block_cols), out_width - c0), out_width};
    }
};

gradient_geometry geometry_of(const problem& p) {
    const filter_blocks f = filter_blocks_of(p);
    gradient_geometry g{};
    g.batch = p.batch;
    g.channels = p.in_channels;
    g.out_channels = p.out_channels;
    g.multiplier = p.out_channels / p.in_channels;
    g.height = p.height;
    g.width = p.width;
    g.out_height = p.out_height();
    g.out_width = p.out_width();
    g.pad_height = p.padding.height;
    g.pad_width = p.padding.width;
    g.kernel_height = p.kernel.height;
    g.kernel_width = p.kernel.width;
    g.block_rows = f.block_rows;
    g.block_cols = f.block_cols;
    g.blocks_wide = f.blocks_wide;
    g.blocks = f.count();
    g.positions = p.batch * g.blocks;
    // Splits of an even number of positions (two per iteration), none empty.
    const std::int64_t wanted = std::clamp<std::int64_t>(target_blocks / p.out_channels, 1, (g.positions + 1) / 2);
    g.per_split = ceil_div(ceil_div(g.positions, wanted), 2) * 2;
    g.splits = ceil_div(g.positions, g.per_split);
    return g;
}

// Blocks per SM: 3, as many as the 66.5 KB of shared memory allows (the
// forward depthwise kernel measured 1.44x faster at 3 than at 2).
__global__ void __launch_bounds__(threads, 3)
    accumulate_products(gradient_geometry g, const float* __restrict__ x, const float* __restrict__ dy,
                        float2* __restrict__ partial) {
    extern __shared__ float2 shared[];
    const int lane = threadIdx.x, group = threadIdx.y, linear = group * tile + lane;
    float2* z = shared + group * tile * pitch;
    const std::int64_t o = blockIdx.x / g.splits, split = blockIdx.x % g.splits;
    const std::int64_t begin = split * g.per_split, end = min(begin + g.per_split, g.positions);

    float2 sum[owned_bins];
#pragma unroll
    for (int j = 0; j < owned_bins; ++j) sum[j] = float2{0.0f, 0.0f};

#pragma unroll 1
    for (std::int64_t first = begin; first < end; first += groups) {
        tile_window wx{}, wd{};
        if (first + group < end) g.windows(o, first + group, wx, wd);
        load_pair<tile>(z, lane, x, wx, dy, wd, 1.0f);
        __syncthreads();
        transform_row<tile, false>(z, lane, max(wx.rows, wd.rows));
        __syncthreads();
        {
            float2 v[tile];
            transform_column<tile, false>(z, lane, v);
#pragma unroll
            for (int k = 0; k < tile; ++k) z[bit_reversed<tile>.index[k] * pitch + lane] = v[k];
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < owned_bins; ++j) {
            const int bin = linear + j * threads;
            if (bin >= bins) break;
            const int r = bin / freq_cols, s = bin % freq_cols;
#pragma unroll
            for (int k = 0; k < groups; ++k) {
                const float2* zk = shared + k * tile * pitch;
                const float2 a = zk[r * pitch + s], m = zk[((tile - r) % tile) * pitch + (tile - s) % tile];
                const float2 u{a.x + m.x, a.y - m.y}, v{a.x - m.x, a.y + m.y};  // A + conj(M), A - conj(M)
                sum[j].x += u.x * v.y - u.y * v.x;                              // 4 X conj(D) = i u conj(v)
                sum[j].y += u.x * v.x + u.y * v.y;
            }
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

// One block (one 64-thread group) per output channel.
__global__ void __launch_bounds__(tile) inverse_to_filter(gradient_geometry g, const float2* __restrict__ partial,
                                                          float* __restrict__ dw) {
    __shared__ float2 z[tile * pitch];
    const int lane = threadIdx.x;
    const std::int64_t o = blockIdx.x;
    const float scale = 1.0f / (4.0f * tile * tile);
    const float2* sums = partial + o * g.splits * bins;
    for (int bin = lane; bin < bins; bin += tile) {
        float2 total{0.0f, 0.0f};
        for (std::int64_t k = 0; k < g.splits; ++k) {
            const float2 part = sums[k * bins + bin];
            total.x += part.x;
            total.y += part.y;
        }
        total = float2{scale * total.x, scale * total.y};
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
    const bool column_sees = tap_sees_input(lane, g.out_width, g.pad_width, g.width);
#pragma unroll
    for (int k = 0; k < tile; ++k) {
        const int u = bit_reversed<tile>.index[k];
        if (u < g.kernel_height) {
            const bool sees = column_sees && tap_sees_input(u, g.out_height, g.pad_height, g.height);
            dw[(o * g.kernel_height + u) * g.kernel_width + lane] = sees ? v[k].x : 0.0f;
        }
    }
}

}  // namespace

bool fits_depthwise_filter_gradient(const problem& p) {
    return p.group_in_channels() == 1 && p.kernel.height <= max_blocked_kernel && p.kernel.width <= max_blocked_kernel;
}

std::size_t depthwise_filter_gradient_scratch(const problem& p) {
    const gradient_geometry g = geometry_of(p);
    return sizeof(float2) * std::size_t(p.out_channels * g.splits * bins);
}

void depthwise_filter_gradient(engine& e, const problem& p, const float* x, const float* dy, float* dw,
                               void* scratch) {
    const gradient_geometry g = geometry_of(p);
    auto* partial = static_cast<float2*>(scratch);
    allow_shared_bytes(accumulate_products, fused_shared_bytes(tile));
    e.log_launch(reinterpret_cast<const void*>(accumulate_products));
    accumulate_products<<<unsigned(p.out_channels * g.splits), dim3(tile, groups), fused_shared_bytes(tile),
                          e.stream()>>>(g, x, dy, partial);
    FFTCONV_CHECK_LAUNCH();
    e.log_launch(reinterpret_cast<const void*>(inverse_to_filter));
    inverse_to_filter<<<unsigned(p.out_channels), tile, 0, e.stream()>>>(g, partial, dw);
    FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
