// src/backward/gradient_passes.cu — the gradients' passes that move data
// without transforming it (gradient_passes.hpp).
#include <algorithm>

#include "backward/gradient_passes.hpp"
#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"

namespace fftconv::detail {
namespace {

constexpr int block_threads = 256;

unsigned blocks_for(std::int64_t total) { return grid_stride_blocks(total, block_threads); }

// out[t] = in[map.source(t)], or 0 where it is -1 (gradient_operands.hpp).
template <class Map>
__global__ void rearrange(const float* __restrict__ in, float* __restrict__ out, Map map, std::int64_t total) {
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t from = map.source(t);
        out[t] = from >= 0 ? in[from] : 0.0f;
    }
}

template <class Map>
void launch_rearrange(const float* in, float* out, const Map& map, std::int64_t total, cudaStream_t stream) {
    launch(rearrange<Map>, blocks_for(total), block_threads, 0, stream, in, out, map, total);
}

// The same for a block_gather, a warp per output row: the 64-bit index
// arithmetic once per row instead of once per element (per element it
// dominated the filter gradient of small problems).
constexpr int warp = 32;

template <class E>
__global__ void gather_rows(const E* __restrict__ in, E* __restrict__ out, block_gather map, std::int64_t lines) {
    const int lane = int(threadIdx.x) % warp;
    const std::int64_t warps = std::int64_t(gridDim.x) * (blockDim.x / warp);
    for (std::int64_t line = (blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x) / warp; line < lines;
         line += warps) {
        const row_span s = map.row(line);
        E* row = out + line * map.cols;
        for (std::int64_t j = lane; j < map.cols; j += warp)
            row[j] = j >= s.begin && j < s.end ? in[s.source + j] : from_float<E>(0.0f);
    }
}

template <class E>
void launch_gather_rows(const E* in, E* out, const block_gather& map, std::int64_t total, cudaStream_t stream) {
    const std::int64_t lines = total / map.cols;
    launch(gather_rows<E>, blocks_for(lines * warp), block_threads, 0, stream, in, out, map, lines);
}

// dbias[o] = sum over b, i, j of dy[b][o][i][j], one block per channel, in
// double; the plane read as Vec units (float4 where its planes allow, else
// float). A thread takes units k, k + blockDim.x, ... of each plane, and
// `sum_samples` samples at a time: that many independent loads in flight
// before its adds wait on them (one block a channel leaves few warps to hide
// the memory latency with).
constexpr int sum_threads_max = 1024, sum_samples = 4;

__device__ __forceinline__ double widened_sum(float v) { return double(v); }
__device__ __forceinline__ double widened_sum(float4 v) {
    return (double(v.x) + double(v.y)) + (double(v.z) + double(v.w));
}

template <class Vec>
__global__ void __launch_bounds__(sum_threads_max)
    sum_planes(const float* __restrict__ dy, float* __restrict__ dbias, std::int64_t batch, std::int64_t channels,
               std::int64_t plane) {
    __shared__ double partial[sum_threads_max];
    const std::int64_t units = plane / std::int64_t(sizeof(Vec) / sizeof(float));
    const std::int64_t sample_stride = channels * units;  // in units
    for (std::int64_t o = blockIdx.x; o < channels; o += gridDim.x) {
        const Vec* planes = reinterpret_cast<const Vec*>(dy) + o * units;  // sample 0's
        double sum = 0.0;
        for (std::int64_t k = threadIdx.x; k < units; k += blockDim.x) {
            std::int64_t b = 0;
            for (; b + sum_samples <= batch; b += sum_samples) {
                Vec v[sum_samples];
#pragma unroll
                for (int s = 0; s < sum_samples; ++s) v[s] = planes[(b + s) * sample_stride + k];
#pragma unroll
                for (int s = 0; s < sum_samples; ++s) sum += widened_sum(v[s]);
            }
            for (; b < batch; ++b) sum += widened_sum(planes[b * sample_stride + k]);
        }
        partial[threadIdx.x] = sum;
        __syncthreads();
        for (int half = blockDim.x / 2; half > 0; half /= 2) {
            if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
            __syncthreads();
        }
        if (threadIdx.x == 0) dbias[o] = float(partial[0]);
        __syncthreads();
    }
}

// dw[o][c][u][v] = 0 where tap (u, v) sees only padding (the transforms
// leave rounding noise there: filter_gradient_result). Launched only where
// the problem has such taps.
__global__ void zero_unseen_taps_kernel(float* __restrict__ dw, detail::filter_gradient_result taps, std::int64_t total) {
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x)
        if (!taps.sees(t)) dw[t] = 0.0f;
}

}  // namespace

void rearrange(const float* in, float* out, const flipped_filter& map, std::int64_t total, cudaStream_t stream) {
    launch_rearrange(in, out, map, total, stream);
}
template <activation_element E>
void rearrange(const E* in, E* out, const block_gather& map, std::int64_t total, cudaStream_t stream) {
    launch_gather_rows(in, out, map, total, stream);
}
template void rearrange(const float*, float*, const block_gather&, std::int64_t, cudaStream_t);
template void rearrange(const __nv_bfloat16*, __nv_bfloat16*, const block_gather&, std::int64_t, cudaStream_t);
template void rearrange(const __half*, __half*, const block_gather&, std::int64_t, cudaStream_t);
void rearrange(const float* in, float* out, const filter_gradient_result& map, std::int64_t total,
               cudaStream_t stream) {
    launch_rearrange(in, out, map, total, stream);
}

void zero_unseen_taps(float* dw, const problem& p, cudaStream_t stream) {
    launch(zero_unseen_taps_kernel, blocks_for(p.filter_elements()), block_threads, 0, stream, dw,
           filter_gradient_transpose(p), p.filter_elements());
}

void sum_bias_gradient(const float* dy, float* dbias, const problem& p, cudaStream_t stream) {
    const std::int64_t plane = p.out_height() * p.out_width();
    const bool quads = plane % 4 == 0 && reinterpret_cast<std::uintptr_t>(dy) % 16 == 0;
    const std::int64_t units = quads ? plane / 4 : plane;
    // A power of two (the block's tree reduction), from a warp to as many
    // threads as a plane has units.
    int threads = 32;
    while (threads < sum_threads_max && threads < units) threads *= 2;
    const auto blocks = unsigned(std::min<std::int64_t>(p.out_channels, 65535));
    if (quads)
        launch(sum_planes<float4>, blocks, threads, 0, stream, dy, dbias, p.batch, p.out_channels, plane);
    else
        launch(sum_planes<float>, blocks, threads, 0, stream, dy, dbias, p.batch, p.out_channels, plane);
}

}  // namespace fftconv::detail
