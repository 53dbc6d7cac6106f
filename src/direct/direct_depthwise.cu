// src/direct/direct_depthwise.cu — see direct_depthwise.hpp.
//
// A block stages planes_per_block output planes' inputs in shared memory
// (each input plane with its zero padding, and the output channel's filter),
// then each thread computes a column of rows_per_thread outputs of one plane:
// for each filter column v it slides a window of rows_per_thread input values
// down the filter rows u, so that one shared-memory load of x and one
// (broadcast) load of w feed rows_per_thread multiply-adds. Consecutive
// threads take consecutive output columns: their loads of x hit consecutive
// banks.
//
// Accuracy: each output is a float sum per filter column (at most
// max_direct_kernel products), and those sums are added in float (at most
// max_direct_kernel of them): the rounding of a two-level sum, not of one
// chain of Kh x Kw terms (which for K = 27 on random-normal inputs would
// already come close to the 5e-7 relative L2 bar).
#include "direct/direct_depthwise.hpp"

#include <algorithm>

#include "direct/narrow_depthwise.hpp"
#include "direct/plane_extents.hpp"

#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {

namespace {

constexpr int threads = 128, rows_per_thread = 8;
constexpr std::size_t shared_budget = 64 * 1024;  // 3 blocks per SM on the H200

// Cost model (direct_depthwise_seconds): multiply-adds at 12 T/s, a fixed
// cost per plane (its staging and the block's start), x and y once at copy
// bandwidth. The rates are fitted to H200 runs (docs/performance.md), not
// taken from the load/store unit's peak, which is optimistic: a plane costs
// 0.6 ns staged on its own, 0.25 ns where planes smaller than the block are
// staged in one loop.
constexpr double multiply_adds_per_second = 12e12;
constexpr double seconds_per_plane = 0.6e-9, seconds_per_small_plane = 0.25e-9;
constexpr double bytes_per_second = 3e12;
constexpr double launch_seconds = 3e-6;

// Plane n = b * out_channels + o.
struct direct_geometry : plane_extents {
    int row_blocks;                 // ceil(out_height / rows_per_thread)
    int staged_rows, staged_cols;   // a staged plane: its padded input, rows past it zero
    int planes_per_block;

    __host__ __device__ int tasks_per_plane() const { return row_blocks * out_width; }
    __host__ __device__ int plane_floats() const { return staged_rows * staged_cols; }
    __host__ __device__ int taps() const { return kernel_height * kernel_width; }
    std::size_t shared_bytes(int count) const {
        return sizeof(float) * std::size_t(count) * std::size_t(plane_floats() + taps());
    }
};

direct_geometry geometry_of(const problem& p) {
    direct_geometry g{};
    static_cast<plane_extents&>(g) = plane_extents_of(p);
    g.row_blocks = int(ceil_div(p.out_height(), rows_per_thread));
    g.staged_rows = g.row_blocks * rows_per_thread + g.kernel_height - 1;
    g.staged_cols = g.out_width + g.kernel_width - 1;
    // As many planes as give every thread at most one column (a second
    // round for a few threads would take as long as the first), as shared
    // memory allows.
    const int wanted = std::max(1, threads / g.tasks_per_plane());
    const int room = int(shared_budget / g.shared_bytes(1));
    g.planes_per_block = int(std::max<std::int64_t>(1, std::min<std::int64_t>({wanted, room, g.planes})));
    return g;
}

template <class E>
__global__ void __launch_bounds__(threads)
    direct_depthwise_planes(direct_geometry g, const E* __restrict__ x, const float* __restrict__ w,
                            const float* __restrict__ bias, E* __restrict__ y, std::int64_t first_plane) {
    extern __shared__ float shared[];
    __shared__ std::int64_t input_of[threads], channel_of[threads];  // per staged plane (planes_per_block <= threads)
    const int plane_floats = g.plane_floats(), taps = g.taps(), tasks = g.tasks_per_plane();
    float* planes = shared;
    float* filters = shared + g.planes_per_block * plane_floats;
    const std::int64_t plane0 = first_plane + std::int64_t(blockIdx.x) * g.planes_per_block;
    const int count = int(min(std::int64_t(g.planes_per_block), g.planes - plane0));

    // Each plane's 64-bit index arithmetic once (64-bit divisions are long
    // instruction sequences: per staged element they outweighed the sums).
    if (threadIdx.x < count) {
        const std::int64_t n = plane0 + threadIdx.x, b = n / g.out_channels, o = n % g.out_channels;
        input_of[threadIdx.x] = (b * g.in_channels + o / g.multiplier) * g.height * std::int64_t(g.width);
        channel_of[threadIdx.x] = o;
    }
    // Zeros everywhere (the padding, and the rows past it that the last
    // column of 8 outputs reads), then each plane's image into its place.
    for (int i = threadIdx.x; i < count * plane_floats; i += threads) planes[i] = 0.0f;
    __syncthreads();
    const int pixels = g.height * g.width;  // a staged plane holds the image: far below 2^31
    if (pixels < threads) {
        // Planes smaller than the block: one loop over all of them, or most
        // threads idle and each plane waits out its own round trip to memory.
        // Only there: its divisions per element cost larger planes more than
        // the loop saves.
#pragma unroll 4
        for (int i = threadIdx.x; i < count * pixels; i += threads) {
            const int p = i / pixels, pixel = i - p * pixels, row = pixel / g.width;
            planes[p * plane_floats + (g.pad_top + row) * g.staged_cols + g.pad_left + pixel - row * g.width] =
                to_float(x[input_of[p] + pixel]);
        }
#pragma unroll 4
        for (int i = threadIdx.x; i < count * taps; i += threads) {
            const int p = i / taps;
            filters[i] = w[channel_of[p] * taps + i - p * taps];
        }
    } else {
        for (int p = 0; p < count; ++p) {
            const E* image = x + input_of[p];
            float* staged = planes + p * plane_floats + g.pad_top * g.staged_cols + g.pad_left;
            for (int i = threadIdx.x; i < pixels; i += threads) {
                const int row = i / g.width;
                staged[row * g.staged_cols + i - row * g.width] = to_float(image[i]);
            }
            for (int i = threadIdx.x; i < taps; i += threads) filters[p * taps + i] = w[channel_of[p] * taps + i];
        }
    }
    __syncthreads();

    for (int t = threadIdx.x; t < count * tasks; t += threads) {
        const int p = t / tasks, first_row = t % tasks / g.out_width * rows_per_thread, col = t % g.out_width;
        const float* xs = planes + p * plane_floats + first_row * g.staged_cols + col;
        const float* ws = filters + p * taps;
        float sum[rows_per_thread];
#pragma unroll
        for (int r = 0; r < rows_per_thread; ++r) sum[r] = 0.0f;
        for (int v = 0; v < g.kernel_width; ++v) {
            // window[r] = staged row first_row + r + u, column col + v, as u runs down the filter.
            float window[rows_per_thread], column[rows_per_thread];
#pragma unroll
            for (int r = 1; r < rows_per_thread; ++r) window[r] = xs[(r - 1) * g.staged_cols + v];
#pragma unroll
            for (int r = 0; r < rows_per_thread; ++r) column[r] = 0.0f;
#pragma unroll rows_per_thread
            for (int u = 0; u < g.kernel_height; ++u) {
                const float tap = ws[u * g.kernel_width + v];
#pragma unroll
                for (int r = 0; r + 1 < rows_per_thread; ++r) window[r] = window[r + 1];
                window[rows_per_thread - 1] = xs[(u + rows_per_thread - 1) * g.staged_cols + v];
#pragma unroll
                for (int r = 0; r < rows_per_thread; ++r) column[r] = fmaf(window[r], tap, column[r]);
            }
#pragma unroll
            for (int r = 0; r < rows_per_thread; ++r) sum[r] += column[r];
        }
        const std::int64_t n = plane0 + p;
        const float b = bias == nullptr ? 0.0f : bias[channel_of[p]];
        E* out = y + n * g.out_height * std::int64_t(g.out_width) + col;
#pragma unroll
        for (int r = 0; r < rows_per_thread; ++r)
            if (first_row + r < g.out_height) out[std::int64_t(first_row + r) * g.out_width] = from_float<E>(sum[r] + b);
    }
}

bool fits_planes_kernel(const problem& p) {
    if (p.groups <= 1 || p.group_in_channels() != 1) return false;
    if (p.kernel.height > max_direct_kernel || p.kernel.width > max_direct_kernel) return false;
    // One staged plane and its filter within the budget, counted in 64 bits
    // before geometry_of narrows the extents to int (a product of two extents
    // near 2^16 would wrap there).
    const std::int64_t staged_rows = ceil_div(p.out_height(), rows_per_thread) * rows_per_thread + p.kernel.height - 1;
    const std::int64_t staged_cols = p.out_width() + p.kernel.width - 1;
    const std::int64_t floats = staged_rows * staged_cols + p.kernel.height * p.kernel.width;
    return staged_rows <= std::int64_t(shared_budget) && staged_cols <= std::int64_t(shared_budget) &&
           floats * std::int64_t(sizeof(float)) <= std::int64_t(shared_budget);
}

double planes_kernel_seconds(const problem& p) {
    const direct_geometry g = geometry_of(p);
    const double multiply_adds =
        double(g.planes) * double(g.row_blocks * rows_per_thread) * double(g.out_width) * double(g.taps());
    const double bytes = 4.0 * double(p.input_elements() + p.output_elements());
    const bool small_planes = g.height * g.width < threads;  // staged in one loop (the kernel's)
    return launch_seconds + multiply_adds / multiply_adds_per_second +
           double(g.planes) * (small_planes ? seconds_per_small_plane : seconds_per_plane) + bytes / bytes_per_second;
}

template <class E>
void run_planes_kernel(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y) {
    const direct_geometry g = geometry_of(p);
    const std::size_t shared = g.shared_bytes(g.planes_per_block);
    // Always: the kernel's static shared memory (two tables of threads
    // int64s) counts against the 48 KiB a launch gets without opting in, so
    // a dynamic size just under 48 KiB needs it too.
    const auto kernel = direct_depthwise_planes<E>;
    FFTCONV_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    // A grid's x extent stays below 2^31 - 1: more planes take more launches.
    constexpr std::int64_t max_blocks = std::int64_t{1} << 30;
    const std::int64_t blocks = ceil_div(g.planes, g.planes_per_block);
    for (std::int64_t first = 0; first < blocks; first += max_blocks) {
        const auto block_count = unsigned(std::min(max_blocks, blocks - first));
        launch(kernel, block_count, threads, shared, e.stream(), g, x, w, bias, y,
               first * g.planes_per_block);
    }
}

}  // namespace

bool fits_direct_depthwise(const problem& p) { return fits_planes_kernel(p) || fits_narrow_depthwise(p); }

direct_kernel direct_kernel_for(const problem& p) {
    const bool narrow = fits_narrow_depthwise(p) &&
                        (!fits_planes_kernel(p) || narrow_depthwise_seconds(p) < planes_kernel_seconds(p));
    return narrow ? direct_kernel::narrow : direct_kernel::planes;
}

double direct_depthwise_seconds(const problem& p) {
    return direct_kernel_for(p) == direct_kernel::narrow ? narrow_depthwise_seconds(p) : planes_kernel_seconds(p);
}

template <activation_element E>
void direct_depthwise(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y) {
    if (direct_kernel_for(p) == direct_kernel::narrow) narrow_depthwise(e, p, x, w, bias, y);
    else run_planes_kernel(e, p, x, w, bias, y);
}

template void direct_depthwise(engine&, const problem&, const float*, const float*, const float*, float*);
template void direct_depthwise(engine&, const problem&, const __nv_bfloat16*, const float*, const float*,
                               __nv_bfloat16*);
template void direct_depthwise(engine&, const problem&, const __half*, const float*, const float*, __half*);

}  // namespace fftconv::detail
