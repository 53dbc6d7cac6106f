// src/pipeline/spectral_product.cu — the per-bin complex GEMMs of a pass, and the
// elementwise product that replaces them for depthwise convolutions.
#include <algorithm>
#include <climits>

#include <cublas_v2.h>
#include <cuComplex.h>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/kernels/radix3_line_fft.cuh"
#include "fftconv/detail/kernels/warpgroup_spectral_gemm.hpp"
#include "fftconv/detail/pipeline/spectral_product.hpp"

namespace fftconv::detail {

namespace {

__device__ __forceinline__ cuComplex times_conj(cuComplex a, cuComplex w) {
    return make_cuComplex(a.x * w.x + a.y * w.y, a.y * w.x - a.x * w.y);
}
__device__ __forceinline__ cuDoubleComplex times_conj(cuDoubleComplex a, cuDoubleComplex w) {
    return make_cuDoubleComplex(a.x * w.x + a.y * w.y, a.y * w.x - a.x * w.y);
}

// Depthwise (one input channel per group): every output is one product,
// output[f][o][m] = input[f][group(o)][m] * conj(filter[f][0][o]), so a GEMM
// per group (k = 1) would be one launch per group for no arithmetic. Grid-
// stride over (bin, channel of the range, row), rows fastest: coalesced.
template <class Complex>
__global__ void depthwise_product(const Complex* __restrict__ input, const Complex* __restrict__ filter,
                                  Complex* __restrict__ output, std::int64_t rows, std::int64_t first,
                                  std::int64_t count, std::int64_t total, std::int64_t input_bin_stride,
                                  std::int64_t filter_bin_stride, std::int64_t output_bin_stride,
                                  std::int64_t first_out, std::int64_t out_per_group) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const std::int64_t m = idx % rows, rest = idx / rows;
        const std::int64_t o = first + rest % count, f = rest / count;
        const std::int64_t group = (first_out + o) / out_per_group;
        output[f * output_bin_stride + o * rows + m] =
            times_conj(input[f * input_bin_stride + group * rows + m], filter[f * filter_bin_stride + o]);
    }
}

// out[o * bins + f] = in[f * bin_stride + o], 32 x 32 tiles through shared
// memory: reads along o and writes along f both coalesced.
template <class Complex>
__global__ void transpose_bins(const Complex* __restrict__ in, Complex* __restrict__ out, std::int64_t bins,
                               std::int64_t channels, std::int64_t bin_stride) {
    __shared__ Complex tile[32][33];
    const std::int64_t tiles_o = (channels + 31) / 32, tiles = tiles_o * ((bins + 31) / 32);
    for (std::int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
        const std::int64_t o0 = t % tiles_o * 32, f0 = t / tiles_o * 32;
        for (int r = threadIdx.y; r < 32; r += blockDim.y) {
            const std::int64_t f = f0 + r, o = o0 + threadIdx.x;
            if (f < bins && o < channels) tile[r][threadIdx.x] = in[f * bin_stride + o];
        }
        __syncthreads();
        for (int r = threadIdx.y; r < 32; r += blockDim.y) {
            const std::int64_t o = o0 + r, f = f0 + threadIdx.x;
            if (f < bins && o < channels) out[o * bins + f] = tile[threadIdx.x][r];
        }
        __syncthreads();
    }
}

// The radix-3 depthwise kernel's filter (fused_depthwise.cuh,
// depthwise_filter_bins): out[o][a][b] = W[f][g] in float, f and g the
// frequencies slots a and b hold (frequency_in_slot), from output channel
// o's half spectrum in double, bin-major (in[bin * bin_stride + o], bins
// T x (T/2 + 1)); past column T/2, W[f][g] = conj(W[-f][-g]). Threads along
// b: the writes coalesced.
__global__ void slot_order_filter(const double2* __restrict__ in, float2* __restrict__ out, int tile_extent,
                                  std::int64_t channels, std::int64_t bin_stride) {
    const int T = tile_extent, cols = T / 2 + 1;
    const std::int64_t grid = std::int64_t{T} * T, total = channels * grid;
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const std::int64_t o = idx / grid;
        const int slot = int(idx - o * grid), a = slot / T, b = slot - a * T;
        const int f = frequency_in_slot(a, T), g = frequency_in_slot(b, T);
        const bool stored = g < cols;
        const int row = stored ? f : (T - f) % T, col = stored ? g : T - g;
        const double2 w = in[(std::int64_t{row} * cols + col) * bin_stride + o];
        out[idx] = float2{float(w.x), float(stored ? w.y : -w.y)};
    }
}

}  // namespace

namespace {

void slot_order_filters(engine& e, const workspace_layout& t, const filter_operand& filter, void* channel_major) {
    const int T = t.geometry.tile_extent();
    const std::int64_t total = t.geometry.out_channels() * T * T;
    constexpr int threads = 256;
    const unsigned blocks = grid_stride_blocks(total, threads);
    launch(slot_order_filter, blocks, threads, 0, e.stream(),
           static_cast<const double2*>(filter.data) + filter.column_offset, static_cast<float2*>(channel_major), T,
           t.geometry.out_channels(), filter.bin_stride);
}

template <class Complex>
void transpose_filter(engine& e, const workspace_layout& t, const filter_operand& filter, void* channel_major) {
    const std::int64_t bins = t.geometry.freq_bins(), channels = t.geometry.out_channels();
    const std::int64_t tiles = (channels + 31) / 32 * ((bins + 31) / 32);
    const auto kernel = transpose_bins<Complex>;
    launch(kernel, unsigned(std::min<std::int64_t>(tiles, std::int64_t{1} << 20)), dim3(32, 8), 0, e.stream(),
           static_cast<const Complex*>(filter.data) + filter.column_offset, static_cast<Complex*>(channel_major),
           bins, channels, filter.bin_stride);
}

}  // namespace

void channel_major_filter(engine& e, const workspace_layout& t, const filter_operand& filter, void* channel_major) {
    if (t.slot_ordered_filter) slot_order_filters(e, t, filter, channel_major);
    else if (t.geometry.double_intermediates()) transpose_filter<double2>(e, t, filter, channel_major);
    else transpose_filter<float2>(e, t, filter, channel_major);
}

namespace {

template <class Complex>
void launch_depthwise_product(engine& e, const workspace_layout& t, const filter_operand& filter,
                              const pipeline_buffers& b, std::int64_t first, std::int64_t count,
                              const channel_groups& groups) {
    const std::int64_t total = t.geometry.freq_bins() * count * t.gemm_rows;
    constexpr int threads = 256;
    const unsigned blocks = grid_stride_blocks(total, threads);
    const auto kernel = depthwise_product<Complex>;
    launch(kernel, blocks, threads, 0, e.stream(), static_cast<const Complex*>(b.input_spectrum),
           static_cast<const Complex*>(filter.data) + filter.column_offset, static_cast<Complex*>(b.output_spectrum),
           t.gemm_rows, first, count, total, t.input_bin_stride, filter.bin_stride, t.output_bin_stride,
           groups.first_out, groups.out_per_group);
}

// Output channels [first, last) of a depthwise pass (see depthwise_product).
void multiply_depthwise(engine& e, const workspace_layout& t, const filter_operand& filter, const pipeline_buffers& b,
                        std::int64_t first, std::int64_t last, const channel_groups& groups) {
    if (t.geometry.double_intermediates())
        launch_depthwise_product<cuDoubleComplex>(e, t, filter, b, first, last - first, groups);
    else
        launch_depthwise_product<cuComplex>(e, t, filter, b, first, last - first, groups);
}

// The product for output channels [first, last) of the pass, contracting
// over input channels [channel0, channel0 + in_channels) of the input
// spectrum (rows 0.. of the filter spectrum).
void multiply_block(engine& e, const workspace_layout& t, const filter_operand& filter, const pipeline_buffers& b,
                    std::int64_t first, std::int64_t last, std::int64_t channel0, std::int64_t in_channels_64,
                    spectral_gemm_launcher gemm) {
    // Column-major per bin: input M x in (ld M); the filter spectrum is stored
    // [in][ld], i.e. an ld x in matrix, and CUBLAS_OP_C turns it into the
    // in x out conj(W) that cross-correlation needs, at no cost. Output
    // channels [first, last) are rows first.. of that matrix and columns
    // first.. of the output. The pass schedule keeps M, in and ld below 2^31;
    // the bin count (cuBLAS's int batch) can pass it for T > 65534, so bins
    // go in chunks.
    if (last <= first) return;
    const int rows = int(t.gemm_rows);
    const int in_channels = int(in_channels_64);
    const std::int64_t input_offset = channel0 * t.gemm_rows;  // the block's first channel in each bin
    const std::int64_t bins = t.geometry.freq_bins();
    const std::int64_t column = filter.column_offset + first;  // in the filter's rows
    for (std::int64_t f0 = 0; f0 < bins; f0 += INT_MAX) {
        const int count = int(std::min<std::int64_t>(bins - f0, INT_MAX));
        if (t.geometry.double_intermediates()) {
            const cuDoubleComplex one{1.0, 0.0}, zero{0.0, 0.0};
            FFTCONV_CUBLAS_TRY(cublasZgemmStridedBatched(
                e.blas(), CUBLAS_OP_N, CUBLAS_OP_C, rows, int(last - first), in_channels, &one,
                static_cast<const cuDoubleComplex*>(b.input_spectrum) + input_offset + f0 * t.input_bin_stride, rows,
                t.input_bin_stride,
                static_cast<const cuDoubleComplex*>(filter.data) + column + f0 * filter.bin_stride, int(filter.ld),
                filter.bin_stride, &zero,
                static_cast<cuDoubleComplex*>(b.output_spectrum) + first * t.gemm_rows + f0 * t.output_bin_stride,
                rows, t.output_bin_stride, count));
        } else {
            // Our split-TF32 tensor-core kernel where it is faster than
            // cuBLAS's FP32 CGEMM (and more accurate: spectral_gemm.hpp).
            const spectral_gemm_args args{
                static_cast<const float2*>(b.input_spectrum) + input_offset + f0 * t.input_bin_stride,
                static_cast<const float2*>(filter.data) + filter.column_offset + f0 * filter.bin_stride,
                static_cast<float2*>(b.output_spectrum) + f0 * t.output_bin_stride,
                t.gemm_rows, in_channels_64, filter.ld, first, last, count,
                t.input_bin_stride, filter.bin_stride, t.output_bin_stride};
            const bool ours =
                warpgroup_spectral_gemm_runs(args) ? warpgroup_spectral_gemm_pays(args) : spectral_gemm_pays(args);
            if (ours) {
                record_launch(reinterpret_cast<const void*>(gemm));  // which instantiation: the launcher
                gemm(args, e.stream());
                continue;
            }
            const cuComplex one{1.0f, 0.0f}, zero{0.0f, 0.0f};
            FFTCONV_CUBLAS_TRY(cublasCgemmStridedBatched(
                e.blas(), CUBLAS_OP_N, CUBLAS_OP_C, rows, int(last - first), in_channels, &one,
                static_cast<const cuComplex*>(b.input_spectrum) + input_offset + f0 * t.input_bin_stride, rows, t.input_bin_stride,
                static_cast<const cuComplex*>(filter.data) + column + f0 * filter.bin_stride, int(filter.ld),
                filter.bin_stride, &zero,
                static_cast<cuComplex*>(b.output_spectrum) + first * t.gemm_rows + f0 * t.output_bin_stride, rows,
                t.output_bin_stride, count));
        }
    }
}

}  // namespace

void multiply_spectra(engine& e, const workspace_layout& t, const filter_operand& filter,
                      const pipeline_buffers& b, std::int64_t first, std::int64_t last,
                      const channel_groups& groups, spectral_gemm_launcher gemm) {
    if (last <= first) return;
    if (groups.count == 1) {
        multiply_block(e, t, filter, b, first, last, 0, t.geometry.in_channels(), gemm);
        return;
    }
    if (groups.in_per_group == 1) {
        multiply_depthwise(e, t, filter, b, first, last, groups);
        return;
    }
    // One product per group the range touches: its output channels against
    // its input channels (the filter spectrum's rows are the group's).
    const std::int64_t global_first = groups.first_out + first, global_last = groups.first_out + last;
    for (std::int64_t g = global_first / groups.out_per_group; g * groups.out_per_group < global_last; ++g) {
        const std::int64_t lo = std::max(global_first, g * groups.out_per_group) - groups.first_out;
        const std::int64_t hi = std::min(global_last, (g + 1) * groups.out_per_group) - groups.first_out;
        multiply_block(e, t, filter, b, lo, hi, g * groups.in_per_group, groups.in_per_group, gemm);
    }
}

}  // namespace fftconv::detail
