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
// spectrum is as exact as cuFFT's in double. A block a filter; its
// multiply-adds read two operands from shared memory each (bandwidth-bound),
// so the column DFTs compute two rows per load. Not several blocks a filter:
// each would repeat the row DFTs.
#pragma once

#include <algorithm>
#include <cstdint>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {

// Filter n of `w` (filters of kernel_height x kernel_width, contiguous) ->
// spectrum[bin * bin_stride + n], bins T x (T/2 + 1) row-major, times
// `scale`: the layout cuFFT's R2C of the zero-padded filter would write,
// W[f][g] = scale sum_{i,j} w[i][j] exp(-2 pi i (f i + g j) / T). A block a
// filter: the twiddles exp(-2 pi i k / T) and the row DFTs
// partial[i][g] = sum_j w[i][j] exp(-2 pi i g j / T) in shared memory.
template <class Geometry>
__global__ void filter_dft(Geometry geo, const float* __restrict__ w, std::int64_t filters, double scale,
                           double2* __restrict__ spectrum, std::int64_t bin_stride) {
    const int T = geo.tile_extent(), kh = geo.kernel_height(), kw = geo.kernel_width(), cols = T / 2 + 1;
    extern __shared__ double2 dft_shared[];
    double2* twiddle = dft_shared;       // [T]
    double2* partial = dft_shared + T;   // [kh][cols]
    for (int k = threadIdx.x; k < T; k += blockDim.x) {
        double s, c;
        sincospi(-2.0 * k / T, &s, &c);
        twiddle[k] = double2{c, s};
    }
    for (std::int64_t n = blockIdx.x; n < filters; n += gridDim.x) {
        __syncthreads();  // the twiddles are written; the last filter's partial sums read
        const float* filter = w + n * kh * kw;
        for (int idx = threadIdx.x; idx < kh * cols; idx += blockDim.x) {
            const int i = idx / cols, g = idx % cols;
            double re = 0, im = 0;
            for (int j = 0, k = 0; j < kw; ++j, k = k + g >= T ? k + g - T : k + g) {  // k = g j mod T
                const double v = filter[i * kw + j];
                re = fma(v, twiddle[k].x, re);
                im = fma(v, twiddle[k].y, im);
            }
            partial[idx] = double2{re, im};
        }
        __syncthreads();
        // Rows f and f + T/2 together: exp(-2 pi i (f + T/2) i' / T) is
        // exp(-2 pi i f i' / T) times (-1)^i', so one load of each operand
        // serves both (T is even).
        for (int idx = threadIdx.x; idx < T / 2 * cols; idx += blockDim.x) {
            const int f = idx / cols, g = idx % cols;
            double re = 0, im = 0, re_half = 0, im_half = 0;
            double sign = 1;
            for (int i = 0, k = 0; i < kh; ++i, k = k + f >= T ? k + f - T : k + f, sign = -sign) {  // k = f i mod T
                const double2 a = partial[i * cols + g], t = twiddle[k];
                const double pr = fma(a.x, t.x, -a.y * t.y), pi = fma(a.x, t.y, a.y * t.x);
                re += pr;
                im += pi;
                re_half = fma(sign, pr, re_half);
                im_half = fma(sign, pi, im_half);
            }
            spectrum[idx * bin_stride + n] = double2{scale * re, scale * im};
            spectrum[(idx + T / 2 * cols) * bin_stride + n] = double2{scale * re_half, scale * im_half};
        }
    }
}

inline std::size_t filter_dft_shared_bytes(const tile_geometry<>& g) {
    return sizeof(double2) * std::size_t(g.tile_extent() + g.kernel_height() * (g.tile_extent() / 2 + 1));
}

// The spectra of `filters` filters of `w` into `spectrum` (see filter_dft),
// scaled by 1/T^2 (the inverse transform is unnormalised), on `stream`.
template <class Geometry>
void launch_filter_dft(const Geometry& geo, const float* w, std::int64_t filters, double2* spectrum,
                       std::int64_t bin_stride, cudaStream_t stream) {
    const auto kernel = filter_dft<Geometry>;
    const std::size_t shared = filter_dft_shared_bytes(geo.erased());
    if (shared > 48 * 1024)
        FFTCONV_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(shared)));
    const double scale = 1.0 / double(geo.tile_elements());
    launch(kernel, unsigned(std::min<std::int64_t>(filters, std::int64_t{1} << 20)), 256, shared, stream, geo, w,
           filters, scale, spectrum, bin_stride);
}

}  // namespace fftconv::detail
