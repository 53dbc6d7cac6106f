// src/direct_conv.cu — see fftconv/detail/direct_conv.hpp.
#include <algorithm>

#include "fftconv/detail/check.hpp"
#include "fftconv/detail/direct_conv.hpp"
#include "fftconv/detail/workspace_layout.hpp"

namespace fftconv::detail {

namespace {

constexpr int max_threads = 256;
constexpr std::size_t max_plane_bytes = 64 * 1024;   // one plane's window and filter
constexpr std::size_t max_block_bytes = 96 * 1024;   // when a block takes several planes


struct direct_args {
    const float* x;
    const float* w;
    const float* bias;
    float* y;
    std::int64_t batch, channels, out_channels, height, width, out_height, out_width;
    int kernel_height, kernel_width, pad_top, pad_left;
    std::int64_t multiplier;  // output channels per input channel
    direct_blocking blocking;
    std::int64_t work_items;  // plane groups x row bands x column bands
};

__global__ void direct_kernel(direct_args a) {
    constexpr int strip = direct_strip, rows = direct_rows, loads_in_flight = 4;
    extern __shared__ float4 shared4[];
    float* shared = reinterpret_cast<float*>(shared4);
    const direct_blocking& k = a.blocking;
    const int in_rows = int(k.rows_per_band) + a.kernel_height - 1;
    const int in_pitch = int(k.input_pitch), w_pitch = int(k.kernel_pitch);
    const int window_floats = in_rows * in_pitch;
    const int plane_floats = window_floats + a.kernel_height * w_pitch;
    const int row_groups = int(k.rows_per_band) / rows;
    const int per_plane = row_groups * int(k.strips_per_band);
    const std::int64_t planes_total = a.batch * a.out_channels;

    // This thread's plane of the block, first output row of the band, strip.
    const int local_plane = threadIdx.x / per_plane;
    const int local_row = (threadIdx.x % per_plane) / int(k.strips_per_band) * rows;
    const int local_strip = threadIdx.x % int(k.strips_per_band);

    for (std::int64_t item = blockIdx.x; item < a.work_items; item += gridDim.x) {
        const std::int64_t column_band = item % k.column_bands;
        const std::int64_t row_band = (item / k.column_bands) % k.row_bands;
        const std::int64_t plane0 = item / (k.column_bands * k.row_bands) * k.planes;
        const std::int64_t row0 = row_band * k.rows_per_band;               // first output row of the band
        const std::int64_t col0 = column_band * k.strips_per_band * strip;  // first output column
        const std::int64_t plane = plane0 + local_plane;
        const bool computes = local_plane < k.planes && plane < planes_total;

        __syncthreads();  // the previous item's window is no longer read
        // Every plane's input window (zero outside x) and filter: all threads,
        // consecutive ones along a row (coalesced), several loads in flight.
        const int total = int(k.planes) * plane_floats;
        for (int base = threadIdx.x; base < total; base += loads_in_flight * blockDim.x) {
            float v[loads_in_flight];
#pragma unroll
            for (int u = 0; u < loads_in_flight; ++u) {
                const int idx = base + u * blockDim.x;
                v[u] = 0.0f;
                if (idx >= total) continue;
                const int lp = idx / plane_floats, at = idx - lp * plane_floats;
                const std::int64_t pl = plane0 + lp;
                if (pl >= planes_total) continue;
                const std::int64_t o = pl % a.out_channels;
                if (at < window_floats) {
                    const int r = at / in_pitch, j = at - r * in_pitch;
                    const std::int64_t yy = row0 + r - a.pad_top, xx = col0 + j - a.pad_left;
                    const std::int64_t c = (pl / a.out_channels) * a.channels + o / a.multiplier;
                    if (yy >= 0 && yy < a.height && xx >= 0 && xx < a.width)
                        v[u] = a.x[(c * a.height + yy) * a.width + xx];
                } else {
                    const int f = at - window_floats, fu = f / w_pitch, fv = f - fu * w_pitch;
                    if (fv < a.kernel_width) v[u] = a.w[(o * a.kernel_height + fu) * a.kernel_width + fv];
                }
            }
#pragma unroll
            for (int u = 0; u < loads_in_flight; ++u)
                if (base + u * int(blockDim.x) < total) shared[base + u * blockDim.x] = v[u];
        }
        __syncthreads();
        if (!computes) continue;

        const float* window = shared + local_plane * plane_floats + local_row * in_pitch + local_strip * strip;
        const float* filter = shared + local_plane * plane_floats + window_floats;
        float total_sum[rows][strip] = {};
        // Input row i of the thread's window feeds its output row j through
        // filter row u = i - j: each row of inputs is read once for all
        // `rows` output rows (the loop over i is the same in every thread, so
        // the branches on u are uniform).
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
                for (int r = 0; r < strip; ++r) total_sum[j][r] += part[j][r];
        }
        const float add = a.bias == nullptr ? 0.0f : a.bias[plane % a.out_channels];
        const std::int64_t col = col0 + std::int64_t(local_strip) * strip;
#pragma unroll
        for (int j = 0; j < rows; ++j) {
            const std::int64_t row = row0 + local_row + j;
            if (row >= a.out_height) break;
            float* out = a.y + (plane * a.out_height + row) * a.out_width + col;
#pragma unroll
            for (int r = 0; r < strip; ++r)
                if (col + r < a.out_width) out[r] = total_sum[j][r] + add;
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

bool direct_supports(const problem& p) {
    return is_depthwise(p) && direct_blocking_for(p).shared_bytes > 0;
}

void direct_conv(const problem& p, const float* x, const float* w, const float* bias, float* y, cudaStream_t stream) {
    const direct_blocking k = direct_blocking_for(p);
    if (!direct_supports(p)) throw_invalid("fftconv: the direct path cannot run " + to_string(p));
    direct_args a{x, w, bias, y, p.batch, p.in_channels, p.out_channels, p.height, p.width, p.out_height(),
                  p.out_width(), int(p.kernel.height), int(p.kernel.width), int(p.padding.height),
                  int(p.padding.width), p.group_out_channels(), k, 0};
    a.work_items = ceil_div(p.batch * p.out_channels, k.planes) * k.row_bands * k.column_bands;
    if (k.shared_bytes > 48 * 1024)
        FFTCONV_CUDA_TRY(cudaFuncSetAttribute(direct_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              int(k.shared_bytes)));
    const auto blocks = unsigned(std::min<std::int64_t>(a.work_items, std::int64_t{1} << 20));
    direct_kernel<<<blocks, k.threads, k.shared_bytes, stream>>>(a);
    FFTCONV_CHECK_LAUNCH();
}

}  // namespace fftconv::detail
