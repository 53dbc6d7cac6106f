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
    constexpr int strip = direct_strip;
    extern __shared__ float4 shared4[];
    float* shared = reinterpret_cast<float*>(shared4);
    const direct_blocking& k = a.blocking;
    const int in_rows = int(k.rows_per_band) + a.kernel_height - 1;
    const int in_pitch = int(k.input_pitch), w_pitch = int(k.kernel_pitch);
    const int plane_floats = in_rows * in_pitch + a.kernel_height * w_pitch;
    const int per_plane = int(k.rows_per_band * k.strips_per_band);
    const std::int64_t planes_total = a.batch * a.out_channels;

    // This thread's plane of the block, output row of the band, strip.
    const int local_plane = threadIdx.x / per_plane;
    const int local_row = (threadIdx.x % per_plane) / int(k.strips_per_band);
    const int local_strip = threadIdx.x % int(k.strips_per_band);

    for (std::int64_t item = blockIdx.x; item < a.work_items; item += gridDim.x) {
        const std::int64_t column_band = item % k.column_bands;
        const std::int64_t row_band = (item / k.column_bands) % k.row_bands;
        const std::int64_t plane0 = item / (k.column_bands * k.row_bands) * k.planes;
        const std::int64_t row0 = row_band * k.rows_per_band;           // first output row of the band
        const std::int64_t col0 = column_band * k.strips_per_band * strip;  // first output column
        const std::int64_t plane = plane0 + local_plane;
        const bool computes = local_plane < k.planes && plane < planes_total;
        const std::int64_t o = plane % a.out_channels;

        float total[strip] = {};
        for (std::int64_t ci = 0; ci < a.group_in; ++ci) {
            __syncthreads();  // the previous channel's window is no longer read
            // Load every plane's input window (zero outside x) and filter.
            for (int idx = threadIdx.x; idx < int(k.planes) * plane_floats; idx += blockDim.x) {
                const int lp = idx / plane_floats, at = idx % plane_floats;
                const std::int64_t pl = plane0 + lp;
                float v = 0.0f;
                if (pl < planes_total) {
                    const std::int64_t b = pl / a.out_channels, oo = pl % a.out_channels;
                    const std::int64_t c = oo / a.group_out * a.group_in + ci;
                    if (at < in_rows * in_pitch) {
                        const std::int64_t r = row0 + at / in_pitch - a.pad_top;
                        const std::int64_t col = col0 + at % in_pitch - a.pad_left;
                        if (r >= 0 && r < a.height && col >= 0 && col < a.width)
                            v = a.x[((b * a.in_channels + c) * a.height + r) * a.width + col];
                    } else {
                        const int f = at - in_rows * in_pitch, u = f / w_pitch, vv = f % w_pitch;
                        if (vv < a.kernel_width)
                            v = a.w[((oo * a.group_in + ci) * a.kernel_height + u) * a.kernel_width + vv];
                    }
                }
                shared[idx] = v;
            }
            __syncthreads();
            if (!computes) continue;
            const float* window = shared + local_plane * plane_floats + local_row * in_pitch + local_strip * strip;
            const float* filter = shared + local_plane * plane_floats + in_rows * in_pitch;
            float channel_sum[strip] = {};
            for (int u = 0; u < a.kernel_height; ++u) {
                float row_sum[strip] = {};
                const float* in = window + u * in_pitch;
                const float* wr = filter + u * w_pitch;
                for (int v0 = 0; v0 < a.kernel_width; v0 += strip) {
                    // Inputs v0 ... v0 + 2 strip - 1 of this row, and 8 weights (16-byte loads).
                    float seg[2 * strip], wv[strip];
#pragma unroll
                    for (int q = 0; q < 2 * strip / 4; ++q) {
                        const float4 t = *reinterpret_cast<const float4*>(in + v0 + 4 * q);
                        seg[4 * q] = t.x, seg[4 * q + 1] = t.y, seg[4 * q + 2] = t.z, seg[4 * q + 3] = t.w;
                    }
#pragma unroll
                    for (int q = 0; q < strip / 4; ++q) {
                        const float4 t = *reinterpret_cast<const float4*>(wr + v0 + 4 * q);
                        wv[4 * q] = t.x, wv[4 * q + 1] = t.y, wv[4 * q + 2] = t.z, wv[4 * q + 3] = t.w;
                    }
                    // Past the kernel's width the weights are padding: skip them
                    // (0 * an infinite input would make a NaN no true window holds).
                    const int taps = min(strip, a.kernel_width - v0);
#pragma unroll
                    for (int dv = 0; dv < strip; ++dv) {
                        if (dv >= taps) break;
#pragma unroll
                        for (int r = 0; r < strip; ++r) row_sum[r] = fmaf(seg[r + dv], wv[dv], row_sum[r]);
                    }
                }
#pragma unroll
                for (int r = 0; r < strip; ++r) channel_sum[r] += row_sum[r];
            }
#pragma unroll
            for (int r = 0; r < strip; ++r) total[r] += channel_sum[r];
        }
        if (computes) {
            const std::int64_t row = row0 + local_row, col = col0 + std::int64_t(local_strip) * strip;
            if (row < row0 + k.rows_per_band && row < a.out_height) {
                const float add = a.bias == nullptr ? 0.0f : a.bias[o];
                float* out = a.y + (plane * a.out_height + row) * a.out_width + col;
#pragma unroll
                for (int r = 0; r < strip; ++r)
                    if (col + r < a.out_width) out[r] = total[r] + add;
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
    const auto plane_bytes = [&](std::int64_t rows) {
        return sizeof(float) * std::size_t((rows + p.kernel.height - 1) * k.input_pitch +
                                           p.kernel.height * k.kernel_pitch);
    };
    std::int64_t rows = std::min(p.out_height(), std::max<std::int64_t>(1, max_threads / k.strips_per_band));
    while (rows > 1 && plane_bytes(rows) > max_plane_bytes) rows = (rows + 1) / 2;
    if (plane_bytes(rows) > max_plane_bytes) return k;  // shared_bytes 0: unsupported
    k.row_bands = ceil_div(p.out_height(), rows);
    k.rows_per_band = ceil_div(p.out_height(), k.row_bands);  // balanced bands
    const std::int64_t per_plane_threads = k.rows_per_band * k.strips_per_band;
    k.planes = 1;
    if (per_plane_threads < max_threads / 2)
        k.planes = std::clamp<std::int64_t>(
            std::min<std::int64_t>(max_threads / per_plane_threads,
                                   std::int64_t(max_block_bytes / plane_bytes(k.rows_per_band))),
            1, p.batch * p.out_channels);
    k.threads = int(k.planes * per_plane_threads);
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
