// src/direct/narrow_depthwise.cu — see narrow_depthwise.hpp.
//
// A block takes 32 planes (plane m = o * batch + b: output channel-major, so
// that the planes of a block share one or two filters), one per lane, and
// stages their inputs, with zero columns out to the compile-time row width
// `Width`, and their filters in shared memory. Warp `warp` computes output
// rows warp, warp + warps, ... of all 32 planes: for output row i it walks
// the input rows p whose filter row u = p - i + pad_top exists, loads input
// row p (Width values) and the filter row's taps that any pair (input column
// q, output column j) of the two rows meets, shifted so that tap
// v = q - j + pad_left sits at register q - j + Width - 1, and does the Width
// x Width multiply-adds at constant indices. Taps past the filter are staged
// zeros, so the padding costs no branches; inputs past the image are zeros.
//
// Why: at 14 x 14 with K = 27 every output sees the whole image, so the FFT
// path's tiles are mostly padding (32 x 32 for 14 x 14 outputs), and the
// planes kernel (direct_depthwise.cu) multiplies every tap with every output,
// 729 products per output where 196 meet the image. Here a product per
// (output, input) pair of the image (Width^2 per pair of rows), 14 shared
// loads per 196 multiply-adds at Width = 14 (the taps four at a time). The
// lanes of a warp read the same filter address (a broadcast) and 32 planes'
// rows (conflict-free: plane_pitch is 2 mod 4 floats). A warp's 32 output
// rows go to y through shared memory, so that its stores are coalesced.
//
// What makes it fast on the H200 (docs/performance.md): the products in
// diagonal order (independent multiply-adds: no chain of dependent adds
// waits on the FMA latency), staging positions stepped rather than divided
// per element, taps four to a 16-byte load, contiguous planes staged by
// 16-byte loads, the filter rows and their margins staged in one pass (one
// filter where a block stays in one channel), output rows coalesced through
// shared memory and stored as float pairs. Not two input rows per row sum:
// the extra registers cost blocks per SM.
//
// Accuracy: each output is a float sum over the filter rows of per-row float
// sums (at most Width products each): the rounding of a two-level sum, as in
// the planes kernel.
//
// Non-finite values: an input value reaches the outputs of its own plane
// whose rows see its row (the padded product 0 * Inf is NaN, so possibly
// more columns of those rows than the convolution's own), never another
// plane; a filter value reaches the planes of its channel.
#include "direct/narrow_depthwise.hpp"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <numeric>

#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/tiling/workspace_layout.hpp"
#include "direct/plane_extents.hpp"

namespace fftconv::detail {

namespace {

constexpr int lanes = 32;      // planes per block
constexpr int max_warps = 8;   // one output row each at a time
constexpr std::int64_t shared_budget = 112 * 1024;  // 2 blocks per SM at the largest

// The compile-time row widths; a problem runs the smallest that holds both
// its input and output rows (a product per pair of the Width-wide rows: 14
// is there for the 14 x 14 stage of networks at 224^2, which would spend 23%
// of its multiply-adds on the zeros of 16-wide rows; 8 for their 7 x 7 stage).
constexpr int row_widths[] = {8, 12, 14, 16, 20, 24};
static_assert(row_widths[std::size(row_widths) - 1] == max_narrow_width);

// Cost model (narrow_depthwise_seconds): multiply-adds (Width^2 per pair of
// rows, 32 lanes per block whether they hold a plane or not) at
// multiply_adds_per_second or x and y once at copy bandwidth, whichever
// takes longer (blocks stage while others compute), plus a cost per plane
// (its staging and its share of the block's start) and a launch. The rates
// are fitted to H200 runs (docs/performance.md); without the plane cost the
// model underestimates problems of many small planes.
// A grid of few blocks (batch x channels of a few hundred planes) takes at
// least as long as one block: its staging, then its busiest warp's rows one
// after another, a multiply-add of that warp each lone_multiply_add_seconds.
// The throughput terms alone predict such grids several times too fast, and
// the dispatch would then choose this kernel over faster 16- and 32-point
// tiles.
constexpr double multiply_adds_per_second = 17.5e12;
constexpr double seconds_per_plane = 0.4e-9;
constexpr double block_staging_seconds = 4e-6;
constexpr double lone_multiply_add_seconds = 2.5e-9;
constexpr double bytes_per_second = 3e12;
constexpr double launch_seconds = 3e-6;

// Plane m = o * batch + b (output channel-major).
struct narrow_geometry : plane_extents {
    int row_width;     // the kernel's Width
    int plane_pitch;   // floats per staged input plane: height x row_width, made 2 mod 4
    int row_pitch;     // floats per staged output row: out_width, made odd
    int filter_pitch;  // floats per staged filter row, a multiple of 4
    int tap_offset;    // where tap 0 sits in a staged filter row
    int first_read;    // where a row's 2 Width - 1 reads start: 16-byte aligned
    int filters;       // filters a block stages at most (the channels 32 planes can span)
    int warps;
    bool quad_planes;  // an input plane is height x row_width contiguous floats, 16-byte aligned, whole quads
    bool pair_rows;    // output rows are float pairs, 8-byte aligned

    std::int64_t shared_floats() const {
        return std::int64_t(lanes) * plane_pitch + std::int64_t(filters) * kernel_height * filter_pitch +
               std::int64_t(warps) * lanes * row_pitch;
    }
};

// The geometry in 64 bits first: fits_narrow_depthwise checks these before
// they are narrowed to int.
struct wide_extents {
    std::int64_t row_width, plane_pitch, row_pitch, filter_pitch, tap_offset, first_read, filters, shared_bytes;
};

wide_extents extents_of(const problem& p) {
    wide_extents e{};
    const std::int64_t widest = std::max(p.width, p.out_width());
    e.row_width = 0;
    for (const int w : row_widths)
        if (widest <= w) {
            e.row_width = w;
            break;
        }
    if (e.row_width == 0) return e;
    e.plane_pitch = p.height * e.row_width;
    if (e.plane_pitch % 4 == 0) e.plane_pitch += 2;
    // Register d of the taps (d < 2 Width - 1) holds tap v = d - (Width - 1)
    // + pad_left: row position first_read + d with tap v at tap_offset + v.
    // tap_offset >= Width - 1 keeps every read inside the row, and is chosen
    // so that first_read is a multiple of 4 (16-byte loads).
    e.tap_offset = e.row_width - 1 + (4 - p.padding.width % 4) % 4;
    e.first_read = e.tap_offset - (e.row_width - 1) + p.padding.width;
    const std::int64_t reads = (2 * e.row_width - 1 + 3) / 4 * 4;
    e.filter_pitch = (std::max(e.tap_offset + p.kernel.width, e.first_read + reads) + 3) / 4 * 4;
    // A block's planes m0 .. m0 + 31 (m0 a multiple of 32) span the channels
    // m0 / batch .. (m0 + 31) / batch: most where m0 mod batch is largest,
    // batch - gcd(32, batch) (one filter at batch 64, not two).
    e.filters = std::min(p.out_channels, (p.batch - std::gcd(std::int64_t{lanes}, p.batch) + lanes - 1) / p.batch + 1);
    e.row_pitch = p.out_width() | 1;
    e.shared_bytes = 4 * (lanes * e.plane_pitch + e.filters * p.kernel.height * e.filter_pitch +
                          max_warps * lanes * e.row_pitch);
    return e;
}

// x and y given: whether they allow the float kernel's vector loads and stores.
narrow_geometry geometry_of(const problem& p, const float* x = nullptr, const float* y = nullptr) {
    const wide_extents e = extents_of(p);
    narrow_geometry g{};
    static_cast<plane_extents&>(g) = plane_extents_of(p);
    g.row_width = int(e.row_width);
    g.plane_pitch = int(e.plane_pitch);
    g.row_pitch = int(e.row_pitch);
    g.filter_pitch = int(e.filter_pitch);
    g.tap_offset = int(e.tap_offset);
    g.first_read = int(e.first_read);
    g.filters = int(e.filters);
    // As few rounds of rows as max_warps allows, spread evenly over the warps.
    const int rounds = (g.out_height + max_warps - 1) / max_warps;
    g.warps = (g.out_height + rounds - 1) / rounds;
    const auto aligned = [](const float* v, int bytes) { return reinterpret_cast<std::uintptr_t>(v) % bytes == 0; };
    g.quad_planes = x != nullptr && aligned(x, 16) && g.width == g.row_width && g.height * g.width % 4 == 0;
    g.pair_rows = y != nullptr && aligned(y, 8) && g.out_width % 2 == 0;
    return g;
}

// Input rows the filter rows of output row i meet.
__host__ __device__ inline int first_input_row(int i, int pad_top) { return max(0, i - pad_top); }
__host__ __device__ inline int end_input_row(int i, int pad_top, int kernel_height, int height) {
    return min(height, i - pad_top + kernel_height);
}

template <int Width, class E>
__global__ void __launch_bounds__(lanes * max_warps)
    narrow_depthwise_rows(narrow_geometry g, const E* __restrict__ x, const float* __restrict__ w,
                          const float* __restrict__ bias, E* __restrict__ y, std::int64_t first_plane) {
    extern __shared__ __align__(16) float4 shared_quads[];  // the tap loads are 16 bytes
    auto* const shared = reinterpret_cast<float*>(shared_quads);
    __shared__ std::int64_t input_of[lanes], output_of[lanes];
    __shared__ int filter_of[lanes];
    float* const planes = shared;
    float* const filters = planes + lanes * g.plane_pitch;  // 16-byte aligned: plane_pitch is even
    float* const rows_out = filters + g.filters * g.kernel_height * g.filter_pitch;
    const int threads = int(blockDim.x);
    const std::int64_t m0 = first_plane + std::int64_t(blockIdx.x) * lanes;
    const int count = int(min(std::int64_t(lanes), g.planes - m0));
    const std::int64_t first_channel = m0 / g.batch;
    const int staged_filters = int((m0 + count - 1) / g.batch - first_channel) + 1;
    const int out_plane = g.out_height * g.out_width;

    // Each plane's 64-bit offsets once.
    if (threadIdx.x < lanes) {
        const int t = int(threadIdx.x);
        if (t < count) {
            const std::int64_t m = m0 + t, o = m / g.batch, b = m - o * g.batch;
            input_of[t] = (b * g.in_channels + o / g.multiplier) * g.height * std::int64_t(g.width);
            output_of[t] = (b * g.out_channels + o) * std::int64_t(out_plane);
            filter_of[t] = int(o - first_channel);
        } else {
            filter_of[t] = 0;  // an idle lane computes on what its plane holds and stores nothing
        }
    }
    // Zeros where a live lane reads past its image: the columns past it (an
    // idle lane computes on whatever its plane holds and stores nothing).
    if (g.width < Width)
        for (int i = int(threadIdx.x); i < lanes * g.plane_pitch; i += threads) planes[i] = 0.0f;
    __syncthreads();  // the zeros, and the planes' offsets
    // The filters' rows with zeros around the taps, element `flat` of the
    // staged rows a thread, its (row, d) stepped rather than divided per
    // element (a division by a run-time extent is ~20 instructions); loads
    // in flight together with the planes' below.
    const int lane = int(threadIdx.x) % lanes, warp = int(threadIdx.x) / lanes;
    {
        const int step_rows = threads / g.filter_pitch, step_d = threads % g.filter_pitch;
        int row = int(threadIdx.x) / g.filter_pitch, d = int(threadIdx.x) % g.filter_pitch;
#pragma unroll 4
        for (int flat = int(threadIdx.x); flat < staged_filters * g.kernel_height * g.filter_pitch; flat += threads) {
            const int v = d - g.tap_offset;
            filters[flat] = v >= 0 && v < g.kernel_width
                                ? w[(first_channel * g.kernel_height + row) * g.kernel_width + v]
                                : 0.0f;
            row += step_rows;
            d += step_d;
            if (d >= g.filter_pitch) {
                d -= g.filter_pitch;
                ++row;
            }
        }
    }
    // A warp stages a plane at a time. Contiguous planes (row_width = width)
    // as 16-byte loads; else a lane a pixel, each lane's (row, column)
    // stepped rather than divided per pixel.
    const int pixels = g.height * g.width;
    if (std::same_as<E, float> && g.quad_planes) {
        for (int plane = warp; plane < count; plane += g.warps) {
            const auto* const image = reinterpret_cast<const float4*>(x + input_of[plane]);
            auto* const staged = reinterpret_cast<float2*>(planes + plane * g.plane_pitch);  // 8-byte aligned
            for (int quad = lane; quad < pixels / 4; quad += lanes) {
                const float4 four = image[quad];
                staged[2 * quad] = float2{four.x, four.y};
                staged[2 * quad + 1] = float2{four.z, four.w};
            }
        }
    } else {
        const int lane_row = lane / g.width, lane_col = lane % g.width;
        const int step_rows = lanes / g.width, step_cols = lanes % g.width;
        for (int plane = warp; plane < count; plane += g.warps) {
            const E* const image = x + input_of[plane];
            float* const staged = planes + plane * g.plane_pitch;
            int row = lane_row, col = lane_col;
#pragma unroll 4
            for (int pixel = lane; pixel < pixels; pixel += lanes) {
                staged[row * Width + col] = to_float(image[pixel]);
                row += step_rows;
                col += step_cols;
                if (col >= g.width) {
                    col -= g.width;
                    ++row;
                }
            }
        }
    }
    __syncthreads();

    const float* const plane = planes + lane * g.plane_pitch;
    // Register d of filter row u's taps (tap d - (Width - 1) + pad_left) at filter[u * filter_pitch + d].
    const float* const filter = filters + filter_of[lane] * g.kernel_height * g.filter_pitch + g.first_read;
    const float bias_value = bias == nullptr ? 0.0f : bias[first_channel + filter_of[lane]];
    for (int i = warp; i < g.out_height; i += g.warps) {
        float sum[Width];
#pragma unroll
        for (int j = 0; j < Width; ++j) sum[j] = 0.0f;
        const int end = end_input_row(i, g.pad_top, g.kernel_height, g.height);
#pragma unroll 1
        for (int p = first_input_row(i, g.pad_top); p < end; ++p) {
            float in[Width];
#pragma unroll
            for (int q = 0; q < Width; q += 2) {
                const float2 pair = *reinterpret_cast<const float2*>(plane + p * Width + q);
                in[q] = pair.x;
                in[q + 1] = pair.y;
            }
            const auto* const row = reinterpret_cast<const float4*>(filter + (p - i + g.pad_top) * g.filter_pitch);
            // A diagonal d of the Width x Width products at a time: its tap
            // loaded once (four in one 16-byte load), then one multiply-add
            // into each output it meets (independent of each other: no chain
            // of dependent adds waits on the FMA latency; 3 Width + 4 live
            // values). Each row sum starts with a product (q = 0), not a zero.
            float row_sum[Width];
#pragma unroll
            for (int d4 = 0; d4 < 2 * Width - 1; d4 += 4) {
                const float4 four = row[d4 / 4];
                const float quad[4] = {four.x, four.y, four.z, four.w};
#pragma unroll
                for (int k = 0; k < 4; ++k) {
                    const int d = d4 + k;
#pragma unroll
                    for (int j = 0; j < Width; ++j) {
                        const int q = j + d - (Width - 1);
                        if (d < 2 * Width - 1 && q == 0) row_sum[j] = in[0] * quad[k];
                        else if (d < 2 * Width - 1 && q > 0 && q < Width) row_sum[j] = fmaf(in[q], quad[k], row_sum[j]);
                    }
                }
            }
#pragma unroll
            for (int j = 0; j < Width; ++j) sum[j] += row_sum[j];
        }
        // To y through the warp's 32 staged rows (one of each plane): the
        // warp's stores then cover a row of its planes after another,
        // instead of 32 planes per store (each lane writing its own row
        // straight to y would cost 32 sectors per store).
        float* const staged_rows = rows_out + warp * lanes * g.row_pitch;
        __syncwarp();  // the previous row's reads are done
#pragma unroll
        for (int j = 0; j < Width; ++j)
            if (j < g.out_width) staged_rows[lane * g.row_pitch + j] = sum[j] + bias_value;
        __syncwarp();
        // Element k = l * units + j of the warp's rows: unit j of plane l's
        // row, a float pair where rows are (8-byte stores: half the
        // iterations), else a float.
        const int unit = g.pair_rows ? 2 : 1, units = g.out_width / unit;
        int l = lane / units, j = lane % units;
        const int step_planes = lanes / units, step_units = lanes % units;
        for (int k = lane; k < count * units; k += lanes) {
            E* const at = y + output_of[l] + std::int64_t(i) * g.out_width + unit * j;
            const float* const from = staged_rows + l * g.row_pitch + unit * j;
            if (std::same_as<E, float> && g.pair_rows) *reinterpret_cast<float2*>(at) = float2{from[0], from[1]};
            else *at = from_float<E>(from[0]);
            l += step_planes;
            j += step_units;
            if (j >= units) {
                j -= units;
                ++l;
            }
        }
    }
}

template <int Width, class E>
void launch_rows(engine& e, const narrow_geometry& g, const E* x, const float* w, const float* bias, E* y) {
    const auto kernel = narrow_depthwise_rows<Width, E>;
    const std::size_t shared = sizeof(float) * std::size_t(g.shared_floats());
    // Always: the static tables count against the 48 KiB a launch gets
    // without opting in.
    FFTCONV_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    constexpr std::int64_t max_blocks = std::int64_t{1} << 30;
    const std::int64_t blocks = ceil_div(g.planes, std::int64_t(lanes));
    for (std::int64_t first = 0; first < blocks; first += max_blocks) {
        const auto block_count = unsigned(std::min(max_blocks, blocks - first));
        launch(kernel, block_count, lanes * g.warps, shared, e.stream(), g, x, w, bias, y, first * lanes);
    }
}

}  // namespace

bool fits_narrow_depthwise(const problem& p) {
    if (p.groups <= 1 || p.group_in_channels() != 1) return false;
    const wide_extents e = extents_of(p);
    return e.row_width > 0 && p.kernel.height <= max_narrow_kernel_height && p.kernel.width <= shared_budget &&
           p.padding.width <= shared_budget && p.height <= shared_budget && p.out_height() <= shared_budget &&
           e.shared_bytes <= shared_budget;
}

double narrow_depthwise_seconds(const problem& p) {
    const narrow_geometry g = geometry_of(p);
    double row_pairs = 0;  // (output row, input row) pairs, per plane
    for (int i = 0; i < g.out_height; ++i)
        row_pairs += std::max(0, end_input_row(i, g.pad_top, g.kernel_height, g.height) - first_input_row(i, g.pad_top));
    const double multiply_adds = double(ceil_div(g.planes, std::int64_t(lanes)) * lanes) * row_pairs *
                                 double(g.row_width) * double(g.row_width);
    const double bytes = 4.0 * double(p.input_elements() + p.output_elements());
    const double throughput = launch_seconds +
                              std::max(multiply_adds / multiply_adds_per_second, bytes / bytes_per_second) +
                              double(g.planes) * seconds_per_plane;
    double busiest_warp = 0;  // row pairs of the warp with the most
    for (int warp = 0; warp < g.warps; ++warp) {
        double pairs = 0;
        for (int i = warp; i < g.out_height; i += g.warps)
            pairs += std::max(0, end_input_row(i, g.pad_top, g.kernel_height, g.height) - first_input_row(i, g.pad_top));
        busiest_warp = std::max(busiest_warp, pairs);
    }
    const double one_block = launch_seconds + block_staging_seconds +
                             busiest_warp * double(g.row_width) * double(g.row_width) * lone_multiply_add_seconds;
    return std::max(throughput, one_block);
}

template <activation_element E>
void narrow_depthwise(engine& e, const problem& p, const E* x, const float* w, const float* bias, E* y) {
    // The vector loads and stores are the float kernel's.
    const narrow_geometry g = std::same_as<E, float> ? geometry_of(p, reinterpret_cast<const float*>(x),
                                                                   reinterpret_cast<const float*>(y))
                                                     : geometry_of(p);
    switch (g.row_width) {
        case 8: return launch_rows<8>(e, g, x, w, bias, y);
        case 12: return launch_rows<12>(e, g, x, w, bias, y);
        case 14: return launch_rows<14>(e, g, x, w, bias, y);
        case 16: return launch_rows<16>(e, g, x, w, bias, y);
        case 20: return launch_rows<20>(e, g, x, w, bias, y);
        default: return launch_rows<24>(e, g, x, w, bias, y);
    }
}

template void narrow_depthwise(engine&, const problem&, const float*, const float*, const float*, float*);
template void narrow_depthwise(engine&, const problem&, const __nv_bfloat16*, const float*, const float*,
                               __nv_bfloat16*);
template void narrow_depthwise(engine&, const problem&, const __half*, const float*, const float*, __half*);

}  // namespace fftconv::detail
