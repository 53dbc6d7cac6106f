// fftconv/detail/kernels/filter_dft.cuh — the filter spectrum of a depthwise
// problem on the radix-3 tile extents (48, 96), by a direct DFT in double.
//
// Why not cuFFT, as for the other extents without a fused transform: a
// depthwise filter is one small K x K plane per output channel, and cuFFT
// wants it padded to a T x T real tile in the workspace first (a pass of its
// own), a cuFFT plan per filter count, and a work area; and its 48-point D2Z
// failed (CUFFT_EXEC_FAILED) on this transform for some test problems while
// the same cuFFT plan ran in conv2d, not understood (docs/performance.md). Direct,
// it is one kernel without workspace: separable, a row DFT of the K rows then
// a column DFT, about (K + T) (T/2 + 1) K multiply-adds per filter (0.37 M
// at K = 51, T = 96), in double with twiddles from sincospi, so the
// spectrum is as exact as cuFFT's in double.
//
// The column DFT of output column g needs only column g of the row DFTs, so
// a filter's columns are split among blocks without repeating any work: a
// block takes dft_block_columns columns of one filter (a filter alone gives
// an SM too few warps). Its threads each own dft_thread_columns of them, so
// that in every multiply-add one operand is the same for the whole warp (a
// shared-memory broadcast) and the other is the thread's own: the row DFT's
// lanes are filter rows (twiddle shared, filter value own), the column DFT's
// lanes output rows (row-DFT value shared, twiddle own).
#pragma once

#include <cstdint>

#include "fftconv/detail/kernels/radix3_line_fft.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {

inline constexpr int dft_thread_columns = 4;                         // columns a thread computes
inline constexpr int dft_column_threads = 2;                         // threads along a block's columns
inline constexpr int dft_block_columns = dft_thread_columns * dft_column_threads;

// Where filter_dft puts bin (f, g) of filter n, f < T and g <= T/2 (the half
// spectrum of a real plane), already scaled:
// the layout cuFFT's R2C of the zero-padded filter would write, in double,
// bins T x (T/2 + 1) row-major, spectrum[bin * bin_stride + n] (a filter
// spectrum a caller keeps, context::transform_filter) ...
struct half_spectrum_sink {
    double2* spectrum;
    std::int64_t bin_stride;
    int columns;  // T/2 + 1
    __device__ void operator()(std::int64_t n, int f, int g, double2 value) const {
        spectrum[(std::int64_t{f} * columns + g) * bin_stride + n] = value;
    }
};

// ... or the radix-3 depthwise kernel's filter (fused_depthwise.cuh,
// depthwise_filter_bins): all T x T bins of filter n in float, out[n][a][b]
// = W[f][g] for the frequencies slots a and b hold (frequency_in_slot), the
// other half from W[-f][-g] = conj(W[f][g]).
struct slot_order_sink {
    float2* out;
    int tile_extent;
    __device__ void operator()(std::int64_t n, int f, int g, double2 value) const {
        const int T = tile_extent;
        float2* filter = out + n * T * T;
        filter[slot_of_frequency(f, T) * T + slot_of_frequency(g, T)] = float2{float(value.x), float(value.y)};
        if (g > 0 && g < T / 2)
            filter[slot_of_frequency((T - f) % T, T) * T + slot_of_frequency(T - g, T)] =
                float2{float(value.x), float(-value.y)};
    }
};

// W[f][g] = scale sum_{i,j} w[i][j] exp(-2 pi i (f i + g j) / T) of every
// filter n of `w` (filters of kernel_height x kernel_width, contiguous), to
// `sink`. Blocks of (T/2) x dft_column_threads threads; a block's work is
// dft_block_columns columns g of one filter: the row DFTs
// partial[i][g] = sum_j w[i][j] exp(-2 pi i g j / T) into shared memory,
// then the column DFTs. Thread (x, y) owns the columns
// first + y dft_thread_columns + c, c < dft_thread_columns; for the row DFTs
// the rows x, x + T/2, ..., for the column DFTs the output rows x and x + T/2.
template <class Geometry, class Sink>
__global__ void filter_dft(Geometry geo, const float* __restrict__ w, std::int64_t filters, double scale, Sink sink) {
    constexpr int C = dft_thread_columns;
    const int T = geo.tile_extent(), half = T / 2, kh = geo.kernel_height(), kw = geo.kernel_width();
    const int columns = half + 1, column_blocks = (columns + dft_block_columns - 1) / dft_block_columns;
    extern __shared__ double2 dft_shared[];
    double2* twiddle = dft_shared;       // [T]
    double2* partial = dft_shared + T;   // [kh][dft_block_columns]
    const int thread = threadIdx.x + threadIdx.y * blockDim.x;
    for (int k = thread; k < T; k += blockDim.x * blockDim.y) {
        double s, c;
        sincospi(-2.0 * k / T, &s, &c);
        twiddle[k] = double2{c, s};
    }
    const int own = threadIdx.y * C;  // the thread's first column within the block's
    for (std::int64_t work = blockIdx.x; work < filters * column_blocks; work += gridDim.x) {
        const std::int64_t n = work / column_blocks;
        const int first = int(work % column_blocks) * dft_block_columns + own;  // g of the thread's column 0
        __syncthreads();  // the twiddles are written; the last work's partial sums read
        const float* filter = w + n * kh * kw;
        for (int i = threadIdx.x; i < kh; i += half) {
            double re[C] = {}, im[C] = {};
            int k[C] = {};  // g j mod T (g < T: one subtraction keeps it below T)
            for (int j = 0; j < kw; ++j) {
                const double v = filter[i * kw + j];
#pragma unroll
                for (int c = 0; c < C; ++c) {
                    const double2 t = twiddle[k[c]];
                    re[c] = fma(v, t.x, re[c]);
                    im[c] = fma(v, t.y, im[c]);
                    k[c] += first + c;
                    if (k[c] >= T) k[c] -= T;
                }
            }
#pragma unroll
            for (int c = 0; c < C; ++c) partial[i * dft_block_columns + own + c] = double2{re[c], im[c]};
        }
        __syncthreads();
        // Rows f and f + T/2 together: exp(-2 pi i (f + T/2) i' / T) is
        // exp(-2 pi i f i' / T) times (-1)^i', so one load of each operand
        // serves both (T is even).
        const int f = threadIdx.x;
        double re[C] = {}, im[C] = {}, re_half[C] = {}, im_half[C] = {};
        double sign = 1;
        for (int i = 0, k = 0; i < kh; ++i, k = k + f >= T ? k + f - T : k + f, sign = -sign) {  // k = f i mod T
            const double2 t = twiddle[k];
#pragma unroll
            for (int c = 0; c < C; ++c) {
                const double2 a = partial[i * dft_block_columns + own + c];
                const double pr = fma(a.x, t.x, -a.y * t.y), pi = fma(a.x, t.y, a.y * t.x);
                re[c] += pr;
                im[c] += pi;
                re_half[c] = fma(sign, pr, re_half[c]);
                im_half[c] = fma(sign, pi, im_half[c]);
            }
        }
#pragma unroll
        for (int c = 0; c < C; ++c) {
            if (first + c >= columns) break;
            sink(n, f, first + c, double2{scale * re[c], scale * im[c]});
            sink(n, f + half, first + c, double2{scale * re_half[c], scale * im_half[c]});
        }
    }
}

inline std::size_t filter_dft_shared_bytes(const tile_geometry<>& g) {
    return sizeof(double2) * std::size_t(g.tile_extent() + g.kernel_height() * dft_block_columns);
}

// The spectra of `filters` filters of `w` to `sink` (see filter_dft), scaled
// by 1/T^2 (the inverse transform is unnormalised), on `stream`.
template <class Geometry, class Sink>
void launch_filter_dft(const Geometry& geo, const float* w, std::int64_t filters, Sink sink, cudaStream_t stream) {
    const auto kernel = filter_dft<Geometry, Sink>;
    const std::size_t shared = filter_dft_shared_bytes(geo.erased());
    allow_shared_bytes(kernel, shared);
    const int columns = geo.tile_extent() / 2 + 1;
    const std::int64_t work = filters * ((columns + dft_block_columns - 1) / dft_block_columns);
    const double scale = 1.0 / double(geo.tile_elements());
    launch(kernel, grid_stride_blocks(work, 1), dim3(unsigned(geo.tile_extent() / 2), dft_column_threads), shared,
           stream, geo, w, filters, scale, sink);
}

}  // namespace fftconv::detail
