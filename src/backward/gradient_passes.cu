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

// dbias[o] = sum over b, i, j of dy[b][o][i][j], one block per channel, in double.
__global__ void sum_planes(const float* __restrict__ dy, float* __restrict__ dbias, std::int64_t batch,
                           std::int64_t channels, std::int64_t plane) {
    __shared__ double partial[block_threads];
    for (std::int64_t o = blockIdx.x; o < channels; o += gridDim.x) {
        double sum = 0.0;
        for (std::int64_t b = 0; b < batch; ++b) {
            const float* p = dy + (b * channels + o) * plane;
            for (std::int64_t k = threadIdx.x; k < plane; k += blockDim.x) sum += double(p[k]);
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
    launch(sum_planes, unsigned(std::min<std::int64_t>(p.out_channels, 65535)), block_threads, 0, stream, dy, dbias,
           p.batch, p.out_channels, p.out_height() * p.out_width());
}

}  // namespace fftconv::detail
