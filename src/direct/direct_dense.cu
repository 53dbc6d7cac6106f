// src/direct/direct_dense.cu — see direct_dense.hpp.
//
// A block computes a tile of tile_rows x tile_cols outputs (one a thread)
// of `outputs_per_thread` consecutive output channels of one group and one
// sample. Its group's input channels go through shared memory in chunks:
// each chunk's input rows under the tile (zero outside the image: the
// padding) and its filter taps, stored tap-major so that one vector load
// gives a thread the tap's weights of all its output channels. Per tap a
// thread then loads one input value (consecutive threads: consecutive
// columns, no bank conflicts) and one broadcast vector, and does
// outputs_per_thread multiply-adds.
//
// A launch on a small problem is a chain of dependent instructions per warp
// (a few blocks, a few hundred taps an output), not a stream of bytes. So a
// block may split its input channels over `slices` of 256 threads
// (blockDim.z): every warp stages, each slice sums its share of the channels,
// and slice 0 adds the other slices' partial sums, in slice order.
//
// Accuracy: each output is a four-level float sum — over a filter row's
// taps, over a channel's rows, over a slice's channels, over the slices —
// not one chain of C x Kh x Kw terms: each level's rounding grows with the
// square root of its own length, which keeps C = 64, K = 8 (4096 products)
// far inside the 5e-7 relative L2 bar.
#include "direct/direct_dense.hpp"

#include <algorithm>
#include <limits>
#include <string>
#include <type_traits>

#include "fftconv/detail/kernels/async_copy.cuh"
#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {

namespace {

constexpr int tile_cols = 32, tile_rows = 8, threads = tile_cols * tile_rows;  // a slice's threads
constexpr int most_slices = 4;
constexpr std::size_t shared_budget = 48 * 1024;  // no opt-in: one attribute call fewer per launch
constexpr std::int64_t max_grid_extent = 65535;   // a grid's y and z extents

// Cost model (direct_dense_seconds), fitted to the 99 of 192 H200 launches
// (16 problems x 4 outputs a thread x 3 slice counts, L2 flushed) within
// 1.5x of their problem's fastest: 7% RMS relative error there, 12% over
// all 192, and each problem's fastest shape chosen (docs/performance.md, d2).
// A launch is a chain per warp, not a stream of bytes: a fixed cost; each
// staging iteration of a warp (a staged row's copies); a round trip to
// memory for each chunk after the first (staged, then computed: not
// overlapped); then a thread's instructions (per tap: the input load and
// loop, the weights' vector loads, the multiply-adds; per filter row: its
// sums and addresses), each taking the issue slots of the warps sharing its
// scheduler; a wave of resident blocks at a time.
constexpr double fixed_seconds = 6.25e-6;
constexpr double staging_iteration_seconds = 0.17e-6;
constexpr double chunk_seconds = 2.25e-6;
constexpr double issue_cycles_per_warp = 1.45;
constexpr double clock_hz = 1.98e9;
// The H200: 132 SMs of 4 schedulers; 64 K registers and 228 KiB of shared
// memory an SM. ptxas gives the kernel up to 64 registers a thread (its
// launch bound), which holds an SM to 1024 resident threads.
constexpr int sm_count = 132, schedulers_per_sm = 4, resident_threads = 1024;
constexpr std::size_t shared_per_sm = 228 * 1024, shared_reserved_per_block = 1024;

// The extents the kernel reads, narrowed to int once fits_direct_dense has bounded them.
struct dense_geometry {
    int in_channels, out_channels, group_in, group_out;
    int height, width, out_height, out_width, kernel_height, kernel_width, pad_top, pad_left;
    int tiles_wide, blocks_per_group;  // output tiles along a row; channel blocks in a group
    int chunk;                         // input channels staged at a time
    int staged_rows, staged_cols;      // a staged channel's input rows under the tile
    int slices;                        // blockDim.z: the block's input channels split this many ways

    __host__ __device__ int staged_floats() const { return staged_rows * staged_cols; }
    __host__ __device__ int taps() const { return kernel_height * kernel_width; }
    // Where the taps start in shared memory: past the staged inputs, on a 16-byte boundary.
    __host__ __device__ int weights_offset() const { return (chunk * staged_floats() + 3) / 4 * 4; }
};

// A tap's N weights (N-aligned in shared memory) by the widest vector loads.
template <int N>
__device__ __forceinline__ void load_tap(const float* at, float (&weights)[N]) {
    if constexpr (N == 1) {
        weights[0] = at[0];
    } else if constexpr (N == 2) {
        const float2 v = *reinterpret_cast<const float2*>(at);
        weights[0] = v.x;
        weights[1] = v.y;
    } else {
#pragma unroll
        for (int k = 0; k < N; k += 4) {
            const float4 v = *reinterpret_cast<const float4*>(at + k);
            weights[k] = v.x;
            weights[k + 1] = v.y;
            weights[k + 2] = v.z;
            weights[k + 3] = v.w;
        }
    }
}

dense_geometry geometry_of(const problem& p, direct_dense_shape shape) {
    const int outputs_per_thread = shape.outputs_per_thread;
    dense_geometry g{};
    g.slices = shape.slices;
    g.in_channels = int(p.in_channels);
    g.out_channels = int(p.out_channels);
    g.group_in = int(p.group_in_channels());
    g.group_out = int(p.group_out_channels());
    g.height = int(p.height);
    g.width = int(p.width);
    g.out_height = int(p.out_height());
    g.out_width = int(p.out_width());
    g.kernel_height = int(p.kernel.height);
    g.kernel_width = int(p.kernel.width);
    g.pad_top = int(p.padding.height);
    g.pad_left = int(p.padding.width);
    g.tiles_wide = int(ceil_div(p.out_width(), tile_cols));
    g.blocks_per_group = int(ceil_div(p.group_out_channels(), outputs_per_thread));
    g.staged_rows = tile_rows + g.kernel_height - 1;
    g.staged_cols = tile_cols + g.kernel_width - 1;
    const std::size_t per_channel = sizeof(float) * std::size_t(g.staged_floats() + g.taps() * outputs_per_thread);
    // (The 16 bytes of alignment padding: within the budget's slack.)
    g.chunk = int(std::clamp<std::size_t>((shared_budget - 16) / per_channel, 1, std::size_t(g.group_in)));
    return g;
}

// The staged chunk; after the last one, the same memory holds slices 1…'s partial sums.
std::size_t shared_bytes(const dense_geometry& g, int outputs_per_thread) {
    const std::size_t staged = std::size_t(g.weights_offset()) + std::size_t(g.chunk) * std::size_t(g.taps() * outputs_per_thread);
    const std::size_t partials = std::size_t(g.slices - 1) * std::size_t(outputs_per_thread) * threads;
    return sizeof(float) * std::max(staged, partials);
}

std::int64_t block_count(const problem& p, int outputs_per_thread) {
    return ceil_div(p.out_height(), tile_rows) * ceil_div(p.out_width(), tile_cols) * p.groups *
           ceil_div(p.group_out_channels(), outputs_per_thread) * p.batch;
}

// The block's warps (all slices') and its threads, counted across slices.
__device__ __forceinline__ int block_warp() { return int(threadIdx.z) * tile_rows + int(threadIdx.y); }
__device__ __forceinline__ int block_thread() { return block_warp() * tile_cols + int(threadIdx.x); }

// A chunk's input rows under the tile into shared memory (zero outside the
// image: the padding), a warp a staged row, a thread at most two of its
// columns; the warp steps its (channel, row) without dividing. Floats go by
// cp.async from a loop that is not unrolled: every load in flight at once, no
// registers held. Half types widen on the way, four rows' loads in flight a
// thread before their stores.
constexpr int staged_rows_in_flight = 4;
static_assert(2 * tile_cols >= tile_cols + max_direct_dense_kernel - 1, "a staged row is two columns a lane");

template <class E>
__device__ __forceinline__ void stage_inputs(float* to, const E* image, const dense_geometry& g, int first_channel,
                                             int count, int first_row, int first_col) {
    const int warps = g.slices * tile_rows, lane = int(threadIdx.x), rows = count * g.staged_rows;
    const int first = block_warp();
    // Where column s of staged row r of channel c comes from; nullptr where it is padding.
    const auto source = [&](int c, int r, int s) -> const E* {
        const int in_row = first_row + r - g.pad_top, in_col = first_col + s - g.pad_left;
        if (in_row < 0 || in_row >= g.height || in_col < 0 || in_col >= g.width) return nullptr;
        return image + (std::int64_t(first_channel + c) * g.height + in_row) * g.width + in_col;
    };
    int c = first / g.staged_rows, r = first - c * g.staged_rows;
    const auto step = [&] {
        r += warps;
        while (r >= g.staged_rows) {
            r -= g.staged_rows;
            ++c;
        }
    };
    if constexpr (std::is_same_v<E, float>) {
#pragma unroll 1
        for (int q = first; q < rows; q += warps, step())
#pragma unroll 1
            for (int s = lane; s < g.staged_cols; s += tile_cols) {
                const float* from = source(c, r, s);
                copy_4(to + q * g.staged_cols + s, from ? from : image, from ? 4 : 0);
            }
    } else {
#pragma unroll 1
        for (int q0 = first; q0 < rows; q0 += staged_rows_in_flight * warps) {
            float v[staged_rows_in_flight][2];
#pragma unroll
            for (int k = 0; k < staged_rows_in_flight; ++k, step())
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int q = q0 + k * warps, s = lane + h * tile_cols;
                    const E* from = q < rows && s < g.staged_cols ? source(c, r, s) : nullptr;
                    v[k][h] = from ? to_float(*from) : 0.0f;
                }
#pragma unroll
            for (int k = 0; k < staged_rows_in_flight; ++k)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const int q = q0 + k * warps, s = lane + h * tile_cols;
                    if (q < rows && s < g.staged_cols) to[q * g.staged_cols + s] = v[k][h];
                }
        }
    }
}

// A chunk's taps, output-channel minor ([channel][tap][n]): output channel o's
// taps of the chunk are contiguous in w. Channels past the group's end weigh zero.
template <int N>
__device__ __forceinline__ void stage_weights(float* to, const float* w, const dense_geometry& g, int first_channel,
                                              int count, int first_out, int group_end) {
    const int linear = block_thread(), block_threads = g.slices * threads, values = count * g.taps();
#pragma unroll 1
    for (int j = 0; j < N; ++j) {
        const int o = first_out + j;
        const float* from = w + (std::int64_t(min(o, group_end - 1)) * g.group_in + first_channel) * g.taps();
#pragma unroll 1
        for (int i = linear; i < values; i += block_threads) copy_4(to + i * N + j, from + i, o < group_end ? 4 : 0);
    }
}

template <int OutputsPerThread, class E>
__global__ void __launch_bounds__(threads * most_slices, 1)
    direct_dense_tiles(dense_geometry g, const E* __restrict__ x, const float* __restrict__ w,
                       const float* __restrict__ bias, E* __restrict__ y) {
    constexpr int n = OutputsPerThread;
    extern __shared__ float shared[];
    const int staged = g.staged_floats(), taps = g.taps();
    float* inputs = shared;
    float* weights = shared + g.weights_offset();  // [channel][tap][output channel]

    const int col = threadIdx.x, row = threadIdx.y, slice = threadIdx.z;
    const int tile_row = int(blockIdx.x) / g.tiles_wide, tile_col = int(blockIdx.x) - tile_row * g.tiles_wide;
    const int first_out_row = tile_row * tile_rows, first_out_col = tile_col * tile_cols;
    const int group = int(blockIdx.y) / g.blocks_per_group;
    const int first_in = group * g.group_in;
    const int group_end = (group + 1) * g.group_out;
    const int first_out = group * g.group_out + (int(blockIdx.y) - group * g.blocks_per_group) * n;
    const std::int64_t sample = blockIdx.z;
    const E* image = x + (sample * g.in_channels + first_in) * std::int64_t(g.height) * g.width;

    float total[n];  // this slice's channels
#pragma unroll
    for (int j = 0; j < n; ++j) total[j] = 0.0f;
    for (int c0 = 0; c0 < g.group_in; c0 += g.chunk) {
        const int count = min(g.chunk, g.group_in - c0);
        __syncthreads();  // the previous chunk is read
        stage_inputs(inputs, image, g, c0, count, first_out_row, first_out_col);
        stage_weights<n>(weights, w, g, c0, count, first_out, group_end);
        wait_all_copies();
        __syncthreads();

        // The slice's channels of the chunk: slice, slice + slices, …
        const float* at = inputs + slice * staged + row * g.staged_cols + col;
        const float* tap = weights + slice * taps * n;
        for (int c = slice; c < count; c += g.slices, at += g.slices * staged, tap += (g.slices - 1) * taps * n) {
            float channel[n];
#pragma unroll
            for (int j = 0; j < n; ++j) channel[j] = 0.0f;
            for (int u = 0; u < g.kernel_height; ++u) {
                const float* in = at + u * g.staged_cols;
                float line[n];
#pragma unroll
                for (int j = 0; j < n; ++j) line[j] = 0.0f;
#pragma unroll 4
                for (int v = 0; v < g.kernel_width; ++v) {
                    const float value = in[v];
                    float t[n];
                    load_tap<n>(tap + v * n, t);
#pragma unroll
                    for (int j = 0; j < n; ++j) line[j] = fmaf(value, t[j], line[j]);
                }
                tap += g.kernel_width * n;
#pragma unroll
                for (int j = 0; j < n; ++j) channel[j] += line[j];
            }
#pragma unroll
            for (int j = 0; j < n; ++j) total[j] += channel[j];
        }
    }

    if (g.slices > 1) {  // slices 1… hand their sums to slice 0 through the staging memory
        __syncthreads();
        const int thread = row * tile_cols + col;
        if (slice > 0)
#pragma unroll
            for (int j = 0; j < n; ++j) shared[((slice - 1) * n + j) * threads + thread] = total[j];
        __syncthreads();
        if (slice > 0) return;
        for (int s = 1; s < g.slices; ++s)
#pragma unroll
            for (int j = 0; j < n; ++j) total[j] += shared[((s - 1) * n + j) * threads + thread];
    }

    const int out_row = first_out_row + row, out_col = first_out_col + col;
    if (out_row >= g.out_height || out_col >= g.out_width) return;
    const std::int64_t plane = std::int64_t(g.out_height) * g.out_width;
    E* out = y + (sample * g.out_channels + first_out) * plane + std::int64_t(out_row) * g.out_width + out_col;
#pragma unroll
    for (int j = 0; j < n; ++j)
        if (first_out + j < group_end) out[j * plane] = from_float<E>(total[j] + (bias ? bias[first_out + j] : 0.0f));
}

// The modelled seconds of a launch of `shape`: per warp, its staging
// iterations and its slice's share of the taps; slices shorten both and put
// more warps on each scheduler.
double modelled_seconds(const problem& p, direct_dense_shape shape) {
    const int n = shape.outputs_per_thread, slices = shape.slices;
    const dense_geometry g = geometry_of(p, shape);
    const std::int64_t chunks = ceil_div(g.group_in, g.chunk), last = g.group_in - (chunks - 1) * g.chunk;
    const std::int64_t warps = std::int64_t(slices) * tile_rows;
    const auto staging = [&](std::int64_t count) {
        return ceil_div(count * g.staged_rows, warps) * ceil_div(g.staged_cols, tile_cols) +
               n * ceil_div(count * g.taps(), warps * tile_cols);
    };
    const double staging_iterations = double((chunks - 1) * staging(g.chunk) + staging(last));
    const std::int64_t slice_channels = (chunks - 1) * ceil_div(g.chunk, slices) + ceil_div(last, slices);
    const double per_tap = 1.5 + double((n + 3) / 4) + double(n);
    const double per_row = 3.0 + 2.0 * n;
    const double thread_instructions = double(slice_channels) * (g.taps() * per_tap + g.kernel_height * per_row);
    const std::int64_t resident = std::clamp<std::int64_t>(
        std::int64_t(shared_per_sm / (shared_bytes(g, n) + shared_reserved_per_block)), 1,
        resident_threads / (threads * slices));
    const std::int64_t per_sm = ceil_div(block_count(p, n), sm_count);
    const double waves = double(ceil_div(per_sm, resident));
    const double warps_per_scheduler = double(warps * std::min(per_sm, resident)) / schedulers_per_sm;
    const double cycles = issue_cycles_per_warp * warps_per_scheduler;
    return fixed_seconds + waves * (staging_iterations * staging_iteration_seconds + double(chunks - 1) * chunk_seconds +
                                    thread_instructions * cycles / clock_hz);
}

bool grid_fits(const problem& p, int outputs_per_thread) {
    return p.groups * ceil_div(p.group_out_channels(), outputs_per_thread) <= max_grid_extent;
}

// The model's cheapest shape: outputs a thread 1, 2, 4 or 8 (none beyond the
// group's output channels), slices 1, 2 or 4 (none beyond its input channels).
direct_dense_shape cheapest_shape(const problem& p) {
    direct_dense_shape best{1, 1};
    double best_seconds = std::numeric_limits<double>::infinity();
    for (const int n : {1, 2, 4, 8}) {
        if (n > 1 && n > p.group_out_channels()) break;
        for (const int slices : {1, 2, 4}) {
            if (slices > 1 && slices > p.group_in_channels()) break;
            const double s = modelled_seconds(p, {n, slices});
            if (s < best_seconds) {
                best = {n, slices};
                best_seconds = s;
            }
        }
    }
    return best;
}

template <int N, class E>
void launch_dense(engine& e, const problem& p, direct_dense_shape shape, const E* x, const float* w,
                  const float* bias, E* y) {
    const dense_geometry g = geometry_of(p, shape);
    const dim3 grid(unsigned(ceil_div(p.out_height(), tile_rows) * g.tiles_wide),
                    unsigned(p.groups * g.blocks_per_group), unsigned(p.batch));
    launch(direct_dense_tiles<N, E>, grid, dim3(tile_cols, tile_rows, unsigned(shape.slices)), shared_bytes(g, N),
           e.stream(), g, x, w, bias, y);
}

}  // namespace

bool fits_direct_dense(const problem& p) {
    if (is_depthwise(p)) return false;
    if (p.kernel.height > max_direct_dense_kernel || p.kernel.width > max_direct_dense_kernel) return false;
    // A tile index and a plane of outputs within int; the grid's y (one
    // output a thread: the most channel blocks) and z extents.
    const std::int64_t tiles = ceil_div(p.out_height(), tile_rows) * ceil_div(p.out_width(), tile_cols);
    return p.batch <= max_grid_extent && grid_fits(p, 1) && tiles <= std::numeric_limits<int>::max() &&
           p.out_height() * p.out_width() <= std::numeric_limits<int>::max() &&
           p.height * p.width <= std::numeric_limits<int>::max();
}

direct_dense_shape direct_dense_choice(const problem& p) { return cheapest_shape(p); }

double direct_dense_seconds(const problem& p) { return modelled_seconds(p, cheapest_shape(p)); }

double direct_dense_seconds(const problem& p, direct_dense_shape shape) { return modelled_seconds(p, shape); }

template <activation_element E>
void direct_dense(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y,
                  direct_dense_shape shape) {
    if (shape.outputs_per_thread != 1 && shape.outputs_per_thread != 2 && shape.outputs_per_thread != 4 &&
        shape.outputs_per_thread != 8)
        throw_invalid("fftconv: direct_dense: outputs a thread must be 1, 2, 4 or 8, not " +
                      std::to_string(shape.outputs_per_thread));
    if (shape.slices != 1 && shape.slices != 2 && shape.slices != 4)
        throw_invalid("fftconv: direct_dense: slices must be 1, 2 or 4, not " + std::to_string(shape.slices));
    if (!grid_fits(p, shape.outputs_per_thread))
        throw_invalid("fftconv: direct_dense: " + std::to_string(shape.outputs_per_thread) +
                      " outputs a thread leave too many channel blocks for the grid of " + to_string(p));
    switch (shape.outputs_per_thread) {
        case 8: return launch_dense<8>(e, p, shape, x, w, bias, y);
        case 4: return launch_dense<4>(e, p, shape, x, w, bias, y);
        case 2: return launch_dense<2>(e, p, shape, x, w, bias, y);
        default: return launch_dense<1>(e, p, shape, x, w, bias, y);
    }
}

template void direct_dense(engine&, const problem&, const float*, const float*, const float*, float*,
                           direct_dense_shape);
template void direct_dense(engine&, const problem&, const __nv_bfloat16*, const float*, const float*,
                           __nv_bfloat16*, direct_dense_shape);
template void direct_dense(engine&, const problem&, const __half*, const float*, const float*, __half*,
                           direct_dense_shape);

}  // namespace fftconv::detail
