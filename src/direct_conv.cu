// src/direct_conv.cu — see fftconv/detail/direct_conv.hpp.
#include <algorithm>

#include "fftconv/detail/check.hpp"
#include "fftconv/detail/direct_conv.hpp"

namespace fftconv::detail {

namespace {

constexpr int max_threads = 256;
constexpr std::size_t max_plane_bytes = 64 * 1024;   // one plane's window and filter
constexpr std::size_t max_block_bytes = 48 * 1024;   // when a block takes several planes

constexpr std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

struct direct_args {
    const float* x;
    const float* w;
    const float* bias;
    float* y;
    std::int64_t batch, in_channels, out_channels, height, width, out_height, out_width;
    int kernel_height, kernel_width, pad_top, pad_left;
    std::int64_t group_in, group_out;
    direct_blocking blocking;
    std::int64_t work_items;  // plane groups x row bands x column bands
};

__global__ void direct_kernel(direct_args a) {
    constexpr int strip = direct_strip, rows = direct_rows;
    extern __shared__ float4 shared4[];
    float* shared = reinterpret_cast<float*>(shared4);
    const direct_blocking& k = a.blocking;
    const int in_rows = int(k.rows_per_band) + a.kernel_height - 1;
    const int in_pitch = int(k.input_pitch), w_pitch = int(k.kernel_pitch);
    const int plane_rows = in_rows + a.kernel_height;  // the input window's rows, then the filter's
    const int plane_floats = in_rows * in_pitch + a.kernel_height * w_pitch;
    const int row_groups = int(k.rows_per_band) / rows;
    const int per_plane = row_groups * int(k.strips_per_band);
    const std::int64_t planes_total = a.batch * a.out_channels;

    // This thread's plane of the block, first output row of the band, strip.
    const int local_plane = threadIdx.x / per_plane;
    const int local_row = (threadIdx.x % per_plane) / int(k.strips_per_band) * rows;
    const int local_strip = threadIdx.x % int(k.strips_per_band);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;

    for (std::int64_t item = blockIdx.x; item < a.work_items; item += gridDim.x) {
        const std::int64_t column_band = item % k.column_bands;
        const std::int64_t row_band = (item / k.column_bands) % k.row_bands;
        const std::int64_t plane0 = item / (k.column_bands * k.row_bands) * k.planes;
        const std::int64_t row0 = row_band * k.rows_per_band;               // first output row of the band
        const std::int64_t col0 = column_band * k.strips_per_band * strip;  // first output column
        const std::int64_t plane = plane0 + local_plane;
        const bool computes = local_plane < k.planes && plane < planes_total;

        float total[rows][strip] = {};
        for (std::int64_t ci = 0; ci < a.group_in; ++ci) {
            __syncthreads();  // the previous channel's window is no longer read
            // Every plane's input window (zero outside x) and filter, a warp per
            // row, its lanes along the row (coalesced).
            for (int rr = warp; rr < int(k.planes) * plane_rows; rr += warps) {
                const int lp = rr / plane_rows, r = rr % plane_rows;
                const std::int64_t pl = plane0 + lp;
                const std::int64_t b = pl / a.out_channels, oo = pl % a.out_channels;
                const std::int64_t c = oo / a.group_out * a.group_in + ci;
                float* dst = shared + lp * plane_floats;
                if (r < in_rows) {
                    const std::int64_t y = row0 + r - a.pad_top;
                    const bool inside = pl < planes_total && y >= 0 && y < a.height;
                    const float* src = a.x + ((b * a.in_channels + c) * a.height + y) * a.width;
                    for (int j = lane; j < in_pitch; j += 32) {
                        const std::int64_t col = col0 + j - a.pad_left;
                        dst[r * in_pitch + j] = inside && col >= 0 && col < a.width ? src[col] : 0.0f;
                    }
                } else {
                    const int u = r - in_rows;
                    const float* src = a.w + ((oo * a.group_in + ci) * a.kernel_height + u) * a.kernel_width;
                    for (int j = lane; j < w_pitch; j += 32)
                        dst[in_rows * in_pitch + u * w_pitch + j] =
                            pl < planes_total && j < a.kernel_width ? src[j] : 0.0f;
                }
            }
            __syncthreads();
            if (!computes) continue;
            const float* window = shared + local_plane * plane_floats + local_row * in_pitch + local_strip * strip;
            const float* filter = shared + local_plane * plane_floats + in_rows * in_pitch;
            // Input row i of the thread's window feeds its output row j through
            // filter row u = i - j: each row of inputs is read once for all
            // `rows` outputs rows (the loop over i is the same in every thread,
            // so the branches on u are uniform).
            for (int i = 0; i < rows + a.kernel_height - 1; ++i) {
                float part[rows][strip] = {};
                const float* in = window + i * in_pitch;
                for (int v0 = 0; v0 < a.kernel_width; v0 += strip) {
                    float seg[2 * strip];
#pragma unroll
                    for (int q = 0; q < 2 * strip / 4; ++q) {
                        const float4 t = *reinterpret_cast<const float4*>(in + v0 + 4 * q);
                        seg[4 * q] = t.x, seg[4 * q + 1] = t.y, seg[4 * q + 2] = t.z, seg[4 * q + 3] = t.w;
                    }
                    // Past the kernel's width the weights are padding: skip them
                    // (0 * an infinite input would make a NaN no true window holds).
                    const int taps = min(strip, a.kernel_width - v0);
#pragma unroll
                    for (int j = 0; j < rows; ++j) {
                        const int u = i - j;
                        if (u < 0 || u >= a.kernel_height) continue;
                        float wv[strip];
#pragma unroll
                        for (int q = 0; q < strip / 4; ++q) {
                            const float4 t = *reinterpret_cast<const float4*>(filter + u * w_pitch + v0 + 4 * q);
                            wv[4 * q] = t.x, wv[4 * q + 1] = t.y, wv[4 * q + 2] = t.z, wv[4 * q + 3] = t.w;
                        }
#pragma unroll
                        for (int dv = 0; dv < strip; ++dv) {
                            if (dv >= taps) break;
#pragma unroll
                            for (int r = 0; r < strip; ++r) part[j][r] = fmaf(seg[r + dv], wv[dv], part[j][r]);
                        }
                    }
                }
                // part[j] is now the whole of filter row i - j for output row j.
#pragma unroll
                for (int j = 0; j < rows; ++j)
#pragma unroll
                    for (int r = 0; r < strip; ++r) total[j][r] += part[j][r];
            }
        }
        if (computes) {
            const float add = a.bias == nullptr ? 0.0f : a.bias[plane % a.out_channels];
            const std::int64_t col = col0 + std::int64_t(local_strip) * strip;
#pragma unroll
            for (int j = 0; j < rows; ++j) {
                const std::int64_t row = row0 + local_row + j;
                if (row >= a.out_height) break;
                float* out = a.y + (plane * a.out_height + row) * a.out_width + col;
#pragma unroll
                for (int r = 0; r < strip; ++r)
                    if (col + r < a.out_width) out[r] = total[j][r] + add;
            }
        }
    }
}

}  // namespace

direct_blocking direct_blocking_for(const problem& p) {
    validate(p);
    direct_blocking k{};
    const std::int64_t strips = ceil_div(p.out_width(), direct_strip);
    k.column_bands = ceil_div(strips, 16);
    k.strips_per_band = ceil_div(strips, k.column_bands);
    k.kernel_pitch = ceil_div(p.kernel.width, direct_strip) * direct_strip;
    // A strip reads 2 strips of inputs from each multiple of the strip in the kernel row.
    k.input_pitch = k.strips_per_band * direct_strip + k.kernel_pitch;
    const auto plane_bytes = [&](std::int64_t band_rows) {
        return sizeof(float) * std::size_t((band_rows + p.kernel.height - 1) * k.input_pitch +
                                           p.kernel.height * k.kernel_pitch);
    };
    // Bands are whole groups of direct_rows output rows (the last may reach past the output).
    const std::int64_t groups = ceil_div(p.out_height(), direct_rows);
    std::int64_t band_groups = std::min(groups, std::max<std::int64_t>(1, max_threads / k.strips_per_band));
    while (band_groups > 1 && plane_bytes(band_groups * direct_rows) > max_plane_bytes)
        band_groups = (band_groups + 1) / 2;
    if (plane_bytes(band_groups * direct_rows) > max_plane_bytes) return k;  // shared_bytes 0: unsupported
    k.row_bands = ceil_div(groups, band_groups);
    k.rows_per_band = ceil_div(groups, k.row_bands) * direct_rows;  // balanced bands
    const std::int64_t per_plane_threads = k.rows_per_band / direct_rows * k.strips_per_band;
    k.planes = 1;
    if (per_plane_threads < max_threads / 2)
        k.planes = std::clamp<std::int64_t>(
            std::min<std::int64_t>(max_threads / per_plane_threads,
                                   std::int64_t(max_block_bytes / plane_bytes(k.rows_per_band))),
            1, p.batch * p.out_channels);
    // Whole warps: the loads go a warp per row.
    k.threads = int(ceil_div(k.planes * per_plane_threads, 32) * 32);
    k.shared_bytes = std::size_t(k.planes) * plane_bytes(k.rows_per_band);
    return k;
}

bool direct_supports(const problem& p) { return direct_blocking_for(p).shared_bytes > 0; }

void direct_conv(const problem& p, const float* x, const float* w, const float* bias, float* y, cudaStream_t stream) {
    const direct_blocking k = direct_blocking_for(p);
    if (k.shared_bytes == 0) throw_invalid("fftconv: the direct path cannot run " + to_string(p));
    direct_args a{x, w, bias, y, p.batch, p.in_channels, p.out_channels, p.height, p.width, p.out_height(),
                  p.out_width(), int(p.kernel.height), int(p.kernel.width), int(p.padding.height),
                  int(p.padding.width), p.group_in_channels(), p.group_out_channels(), k, 0};
    a.work_items = ceil_div(p.batch * p.out_channels, k.planes) * k.row_bands * k.column_bands;
    if (k.shared_bytes > 48 * 1024)
        FFTCONV_CUDA_TRY(cudaFuncSetAttribute(direct_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              int(k.shared_bytes)));
    const auto blocks = unsigned(std::min<std::int64_t>(a.work_items, std::int64_t{1} << 20));
    direct_kernel<<<blocks, k.threads, k.shared_bytes, stream>>>(a);
    FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
