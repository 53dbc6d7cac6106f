// src/backward.cu — the gradients of conv2d (context::conv2d_backward_data,
// context::conv2d_backward_filter), each computed by the forward FFT
// pipeline on rearranged operands, so that every path, table entry and
// accuracy property of the forward serves them too.
//
// Data gradient. y[i] = sum_u xpad[i + u] w[u] (xpad: x with P zeros each
// side) gives dx[j] = sum_u' dypad[j + u'] w[K - 1 - u'], dypad being dy with
// K - 1 - P zeros each side: a forward convolution of dy (Cout channels in,
// Cin out, same groups) with the flipped filter, transposed within each
// group. Where P > K - 1 the "padding" is negative: dy is cropped by
// P - K + 1 each side (those outputs saw only padding and feed no input).
//
// Filter gradient. dw[o][c][u] = sum_b sum_i dy[b][o][i] xpad[b][c][i + u]:
// a forward convolution whose samples are the group's input channels c, whose
// channels are (group, sample b) and whose filters are dy (one Ho x Wo
// kernel per output channel and sample), with the problem's padding and
// groups; its K x K outputs are dw, transposed. The bias gradient is dy
// summed over samples and positions (in double).
#include <algorithm>
#include <string>

#include "fftconv/context.hpp"
#include "fftconv/detail/check.hpp"
#include "fftconv/detail/engine.hpp"
#include "fftconv/detail/pointer_check.hpp"
#include "fftconv/detail/workspace_layout.hpp"

namespace fftconv {

namespace {

constexpr int block_threads = 256;

unsigned blocks_for(std::int64_t total) {
    return unsigned(std::clamp<std::int64_t>((total + block_threads - 1) / block_threads, 1, std::int64_t{1} << 20));
}

// out[c][m][a][k] = in[a][m][c][k]: the outer and third axes swapped, the
// inner block of `inner` elements kept (read along it: coalesced).
__global__ void swap_outer_axes(const float* __restrict__ in, float* __restrict__ out, std::int64_t a_count,
                                std::int64_t mid_count, std::int64_t c_count, std::int64_t inner,
                                std::int64_t total) {
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t k = t % inner, r = t / inner;
        const std::int64_t a = r % a_count, m = (r / a_count) % mid_count, c = r / a_count / mid_count;
        out[t] = in[((a * mid_count + m) * c_count + c) * inner + k];
    }
}

// The data gradient's filter: flipped[c][og][u][v] = w[g * Og + og][c - g * Cg][Kh - 1 - u][Kw - 1 - v]
// for input channel c of group g (Cg input, Og output channels per group).
__global__ void flip_and_transpose(const float* __restrict__ w, float* __restrict__ flipped, std::int64_t group_in,
                                   std::int64_t group_out, std::int64_t kh, std::int64_t kw, std::int64_t total) {
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t v = t % kw, u = (t / kw) % kh, og = (t / kw / kh) % group_out, c = t / kw / kh / group_out;
        const std::int64_t g = c / group_in, o = g * group_out + og;
        flipped[t] = w[((o * group_in + c % group_in) * kh + (kh - 1 - u)) * kw + (kw - 1 - v)];
    }
}

// out[n][i][j] = in[n][i + top][j + left], out being rows x cols per plane n.
__global__ void crop_planes(const float* __restrict__ in, float* __restrict__ out, std::int64_t in_rows,
                            std::int64_t in_cols, std::int64_t rows, std::int64_t cols, std::int64_t top,
                            std::int64_t left, std::int64_t total) {
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t j = t % cols, i = (t / cols) % rows, n = t / cols / rows;
        out[t] = in[(n * in_rows + i + top) * in_cols + j + left];
    }
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

void swap_axes(const float* in, float* out, std::int64_t a, std::int64_t mid, std::int64_t c, std::int64_t inner,
               cudaStream_t stream) {
    const std::int64_t total = a * mid * c * inner;
    swap_outer_axes<<<blocks_for(total), block_threads, 0, stream>>>(in, out, a, mid, c, inner, total);
    FFTCONV_CHECK_LAUNCH();
}

// How far the data gradient crops dy on each side of an axis (P > K - 1),
// and the padding it runs with (K - 1 - P otherwise).
std::int64_t crop_of(std::int64_t padding, std::int64_t kernel) { return std::max<std::int64_t>(0, padding - kernel + 1); }
std::int64_t padding_of(std::int64_t padding, std::int64_t kernel) {
    return std::max<std::int64_t>(0, kernel - 1 - padding);
}

// The forward problem whose output is the data gradient of `p` (see the top).
problem data_gradient_problem(const problem& p) {
    problem q = p;
    q.in_channels = p.out_channels;
    q.out_channels = p.in_channels;
    q.height = p.out_height() - 2 * crop_of(p.padding.height, p.kernel.height);
    q.width = p.out_width() - 2 * crop_of(p.padding.width, p.kernel.width);
    q.padding = {padding_of(p.padding.height, p.kernel.height), padding_of(p.padding.width, p.kernel.width)};
    return q;
}

// The forward problem whose output is the filter gradient of `p`, transposed.
problem filter_gradient_problem(const problem& p) {
    problem q = p;
    q.batch = p.group_in_channels();
    q.in_channels = p.groups * p.batch;
    q.out_channels = p.out_channels;
    q.kernel = {p.out_height(), p.out_width()};
    return q;
}

// Byte offsets of consecutive float arrays of the given lengths in one buffer.
struct scratch_layout {
    std::size_t offsets[3] = {};
    std::size_t bytes = 0;
    explicit scratch_layout(std::initializer_list<std::int64_t> lengths) {
        int i = 0;
        for (const std::int64_t n : lengths) {
            offsets[i++] = bytes;
            bytes += detail::align_up(sizeof(float) * std::size_t(n));
        }
    }
    float* at(void* base, int i) const { return reinterpret_cast<float*>(static_cast<char*>(base) + offsets[i]); }
};

scratch_layout data_scratch(const problem& p) {
    const problem q = data_gradient_problem(p);
    const bool crops = q.input_elements() != p.output_elements();
    return scratch_layout{q.filter_elements(), crops ? q.input_elements() : 0};
}

scratch_layout filter_scratch(const problem& p) {
    const problem q = filter_gradient_problem(p);
    return scratch_layout{q.input_elements(), q.filter_elements(), q.output_elements()};
}

void require_gradient_operand(const void* pointer, std::int64_t elements, int device, const char* name) {
    if (pointer == nullptr) detail::throw_invalid(std::string("fftconv: ") + name + " is a null pointer");
    detail::require_device_memory(pointer, sizeof(float) * std::size_t(elements), device, name);
}

}  // namespace

void context::conv2d_backward_data(const problem& p, const float* dy, const float* w, float* dx) {
    detail::engine& e = *engine_;
    e.begin_call();
    validate(p);
    require_gradient_operand(dy, p.output_elements(), e.device(), "dy");
    require_gradient_operand(w, p.filter_elements(), e.device(), "w");
    require_gradient_operand(dx, p.input_elements(), e.device(), "dx");
    const problem q = data_gradient_problem(p);
    const scratch_layout layout = data_scratch(p);
    void* scratch = e.scratch(layout.bytes);
    float* flipped = layout.at(scratch, 0);
    const std::int64_t flipped_elements = q.filter_elements();
    flip_and_transpose<<<blocks_for(flipped_elements), block_threads, 0, e.stream()>>>(
        w, flipped, p.group_in_channels(), p.group_out_channels(), p.kernel.height, p.kernel.width, flipped_elements);
    FFTCONV_CHECK_LAUNCH();
    const float* input = dy;
    if (q.input_elements() != p.output_elements()) {
        float* cropped = layout.at(scratch, 1);
        const std::int64_t total = q.input_elements();
        crop_planes<<<blocks_for(total), block_threads, 0, e.stream()>>>(
            dy, cropped, p.out_height(), p.out_width(), q.height, q.width,
            crop_of(p.padding.height, p.kernel.height), crop_of(p.padding.width, p.kernel.width), total);
        FFTCONV_CHECK_LAUNCH();
        input = cropped;
    }
    conv2d(q, input, flipped, nullptr, dx);
}

void context::conv2d_backward_filter(const problem& p, const float* x, const float* dy, float* dw, float* dbias) {
    detail::engine& e = *engine_;
    e.begin_call();
    validate(p);
    require_gradient_operand(x, p.input_elements(), e.device(), "x");
    require_gradient_operand(dy, p.output_elements(), e.device(), "dy");
    require_gradient_operand(dw, p.filter_elements(), e.device(), "dw");
    if (dbias != nullptr) detail::require_device_memory(dbias, sizeof(float) * std::size_t(p.out_channels), e.device(), "dbias");
    const problem q = filter_gradient_problem(p);
    const scratch_layout layout = filter_scratch(p);
    void* scratch = e.scratch(layout.bytes);
    float* samples = layout.at(scratch, 0);  // x as [Cg][G][B][H][W]
    float* filters = layout.at(scratch, 1);  // dy as [Cout][B][Ho][Wo]
    float* result = layout.at(scratch, 2);   // dw as [Cg][Cout][Kh][Kw]
    const std::int64_t plane = p.height * p.width, out_plane = p.out_height() * p.out_width();
    const std::int64_t taps = p.kernel.height * p.kernel.width;
    swap_axes(x, samples, p.batch, p.groups, p.group_in_channels(), plane, e.stream());
    swap_axes(dy, filters, p.batch, 1, p.out_channels, out_plane, e.stream());
    conv2d(q, samples, filters, nullptr, result);
    swap_axes(result, dw, p.group_in_channels(), 1, p.out_channels, taps, e.stream());
    if (dbias != nullptr) {
        sum_planes<<<unsigned(std::min<std::int64_t>(p.out_channels, 65535)), block_threads, 0, e.stream()>>>(
            dy, dbias, p.batch, p.out_channels, out_plane);
        FFTCONV_CHECK_LAUNCH();
    }
}

void context::reserve_backward(const problem& p) {
    engine_->begin_call();
    validate(p);
    (void)engine_->scratch(std::max(data_scratch(p).bytes, filter_scratch(p).bytes));
    reserve(data_gradient_problem(p));
    reserve(filter_gradient_problem(p));
}

}  // namespace fftconv
