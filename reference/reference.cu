// reference/reference.cu — the float64 oracle, input generation and accuracy.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fftconv/detail/runtime/check.hpp"
#include "reference.hpp"

namespace fftconv::reference {
namespace {

constexpr int threads = 256;

unsigned blocks_for(std::int64_t n) {
    return unsigned(std::min<std::int64_t>((n + threads - 1) / threads, std::int64_t{1} << 20));
}

// One output of the operator (reference.hpp, direct_conv_gpu): the sum over
// the taps of o's group in the order c, u, v, reads outside the image
// skipped (they are zero), then the bias. Runs on both sides: the GPU kernel
// calls it once per thread, direct_conv_cpu once per output, so the host
// tests check the arithmetic the GPU oracle runs. problem's member functions
// are host constexpr, so the derived extents are spelled out here.
__host__ __device__ double output_at(const problem& p, const float* x, const float* w, const float* bias,
                                     std::int64_t b, std::int64_t o, std::int64_t i, std::int64_t j) {
    const std::int64_t group_in = p.in_channels / p.groups;    // Cg: input channels per group
    const std::int64_t group_out = p.out_channels / p.groups;  // output channels per group
    const std::int64_t g = o / group_out;                      // o's group
    const std::int64_t kh = p.kernel.height, kw = p.kernel.width;
    double sum = 0.0;
    for (std::int64_t c = 0; c < group_in; ++c) {
        const float* xc = x + (b * p.in_channels + g * group_in + c) * p.height * p.width;  // x[b, g*Cg + c]
        const float* wc = w + (o * group_in + c) * kh * kw;                                 // w[o, c]
        for (std::int64_t u = 0; u < kh; ++u) {
            const std::int64_t row = i + u - p.padding.height;
            if (row < 0 || row >= p.height) continue;  // a zero row of the padding
            for (std::int64_t v = 0; v < kw; ++v) {
                const std::int64_t col = j + v - p.padding.width;
                if (col < 0 || col >= p.width) continue;  // a zero column of the padding
                sum += double(xc[row * p.width + col]) * double(wc[u * kw + v]);
            }
        }
    }
    return bias ? double(bias[o]) + sum : sum;
}

// out_height/out_width/total come in as values: problem's members are host constexpr.
__global__ void direct_conv_kernel(problem p, std::int64_t out_height, std::int64_t out_width,
                                   std::int64_t total, const float* __restrict__ x,
                                   const float* __restrict__ w, const float* __restrict__ bias,
                                   double* __restrict__ y) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const std::int64_t j = idx % out_width;
        const std::int64_t i = (idx / out_width) % out_height;
        const std::int64_t o = (idx / (out_width * out_height)) % p.out_channels;
        const std::int64_t b = idx / (out_width * out_height * p.out_channels);
        y[idx] = output_at(p, x, w, bias, b, o, i, j);
    }
}

__device__ std::uint64_t splitmix64(std::uint64_t z) {
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

__global__ void normal_kernel(float* out, std::int64_t n, std::uint64_t seed) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < n;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const std::uint64_t h1 = splitmix64(seed * 0x632be59bd9b4e019ull + 2 * std::uint64_t(idx));
        const std::uint64_t h2 = splitmix64(h1 ^ 0xd1b54a32d192ed03ull);
        // 53-bit uniforms in (0, 1]: the log never sees 0.
        const double u1 = (double(h1 >> 11) + 1.0) * 0x1.0p-53;
        const double u2 = double(h2 >> 11) * 0x1.0p-53;
        out[idx] = float(sqrt(-2.0 * log(u1)) * cospi(2.0 * u2));
    }
}

__global__ void uniform_kernel(float* out, std::int64_t n, std::uint64_t seed) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < n;
         idx += std::int64_t{gridDim.x} * blockDim.x) {
        const std::uint64_t h = splitmix64(seed * 0x632be59bd9b4e019ull + 2 * std::uint64_t(idx) + 1);
        out[idx] = float(double(h >> 40) * 0x1.0p-24);  // 24-bit uniforms in [0, 1): exact in float
    }
}

// The oracle at chosen output elements only (flat [B, Cout, Ho, Wo] indices):
// problems whose full float64 convolution would take minutes are checked on a
// random sample of their outputs.
__global__ void sampled_conv_kernel(problem p, std::int64_t out_height, std::int64_t out_width,
                                    const std::int64_t* __restrict__ indices, std::int64_t count,
                                    const float* __restrict__ x, const float* __restrict__ w,
                                    const float* __restrict__ bias, double* __restrict__ y) {
    const std::int64_t s = blockIdx.x;
    if (s >= count) return;
    const std::int64_t idx = indices[s];
    const std::int64_t j = idx % out_width;
    const std::int64_t i = (idx / out_width) % out_height;
    const std::int64_t o = (idx / (out_width * out_height)) % p.out_channels;
    const std::int64_t b = idx / (out_width * out_height * p.out_channels);
    // The taps of output_at, (c, u, v) flattened, split across the block.
    const std::int64_t group_in = p.in_channels / p.groups;
    const std::int64_t g = o / (p.out_channels / p.groups);
    const std::int64_t kh = p.kernel.height, kw = p.kernel.width;
    const std::int64_t taps = group_in * kh * kw;
    double sum = 0.0;
    for (std::int64_t t = threadIdx.x; t < taps; t += blockDim.x) {
        const std::int64_t v = t % kw, u = (t / kw) % kh, c = t / (kh * kw);
        const std::int64_t row = i + u - p.padding.height, col = j + v - p.padding.width;
        if (row < 0 || row >= p.height || col < 0 || col >= p.width) continue;  // padding: zero
        sum += double(x[((b * p.in_channels + g * group_in + c) * p.height + row) * p.width + col]) *
               double(w[((o * group_in + c) * kh + u) * kw + v]);
    }
    __shared__ double partial[threads];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half /= 2) {
        if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) y[s] = bias ? double(bias[o]) + partial[0] : partial[0];
}

__global__ void nan_kernel(float* out, std::int64_t n) {
    for (std::int64_t idx = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; idx < n;
         idx += std::int64_t{gridDim.x} * blockDim.x)
        out[idx] = __int_as_float(0x7fc00000);
}

// dx[b, c, h, w] = sum over o of c's group, u, v of dy[b, o, h + Ph - u, w + Pw - v] * w[o, c - g*Cg, u, v]
// (positions outside dy skipped): the definition, one thread per element of dx.
__global__ void data_gradient_kernel(problem p, std::int64_t out_height, std::int64_t out_width, std::int64_t total,
                                     const float* dy, const float* w, double* dx) {
    const std::int64_t group_in = p.in_channels / p.groups, group_out = p.out_channels / p.groups;
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t col = t % p.width, row = (t / p.width) % p.height;
        const std::int64_t c = (t / p.width / p.height) % p.in_channels, b = t / p.width / p.height / p.in_channels;
        const std::int64_t g = c / group_in;
        double sum = 0.0;
        for (std::int64_t o = g * group_out; o < (g + 1) * group_out; ++o)
            for (std::int64_t u = 0; u < p.kernel.height; ++u) {
                const std::int64_t i = row + p.padding.height - u;
                if (i < 0 || i >= out_height) continue;
                for (std::int64_t v = 0; v < p.kernel.width; ++v) {
                    const std::int64_t j = col + p.padding.width - v;
                    if (j < 0 || j >= out_width) continue;
                    sum += double(dy[((b * p.out_channels + o) * out_height + i) * out_width + j]) *
                           double(w[((o * group_in + c - g * group_in) * p.kernel.height + u) * p.kernel.width + v]);
                }
            }
        dx[t] = sum;
    }
}

// dw[o, c, u, v] = sum over b, i, j of dy[b, o, i, j] * x[b, g*Cg + c, i + u - Ph, j + v - Pw]
// (positions outside x skipped), one thread per element of dw.
__global__ void filter_gradient_kernel(problem p, std::int64_t out_height, std::int64_t out_width, std::int64_t total,
                                       const float* x, const float* dy, double* dw) {
    const std::int64_t group_in = p.in_channels / p.groups, group_out = p.out_channels / p.groups;
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t v = t % p.kernel.width, u = (t / p.kernel.width) % p.kernel.height;
        const std::int64_t c = (t / p.kernel.width / p.kernel.height) % group_in;
        const std::int64_t o = t / p.kernel.width / p.kernel.height / group_in;
        const std::int64_t channel = o / group_out * group_in + c;
        double sum = 0.0;
        for (std::int64_t b = 0; b < p.batch; ++b)
            for (std::int64_t i = 0; i < out_height; ++i) {
                const std::int64_t row = i + u - p.padding.height;
                if (row < 0 || row >= p.height) continue;
                for (std::int64_t j = 0; j < out_width; ++j) {
                    const std::int64_t col = j + v - p.padding.width;
                    if (col < 0 || col >= p.width) continue;
                    sum += double(dy[((b * p.out_channels + o) * out_height + i) * out_width + j]) *
                           double(x[((b * p.in_channels + channel) * p.height + row) * p.width + col]);
                }
            }
        dw[t] = sum;
    }
}

// dbias[o] = sum over b, i, j of dy[b, o, i, j], one thread per channel.
__global__ void bias_gradient_kernel(problem p, std::int64_t plane, const float* dy, double* dbias) {
    for (std::int64_t o = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; o < p.out_channels;
         o += std::int64_t(gridDim.x) * blockDim.x) {
        double sum = 0.0;
        for (std::int64_t b = 0; b < p.batch; ++b)
            for (std::int64_t k = 0; k < plane; ++k) sum += double(dy[(b * p.out_channels + o) * plane + k]);
        dbias[o] = sum;
    }
}

}  // namespace

void data_gradient_gpu(const problem& p, const float* dy, const float* w, double* dx, cudaStream_t stream) {
    validate(p);
    data_gradient_kernel<<<blocks_for(p.input_elements()), threads, 0, stream>>>(
        p, p.out_height(), p.out_width(), p.input_elements(), dy, w, dx);
    FFTCONV_CHECK_LAUNCH();
}

void filter_gradient_gpu(const problem& p, const float* x, const float* dy, double* dw, double* dbias,
                         cudaStream_t stream) {
    validate(p);
    filter_gradient_kernel<<<blocks_for(p.filter_elements()), threads, 0, stream>>>(
        p, p.out_height(), p.out_width(), p.filter_elements(), x, dy, dw);
    FFTCONV_CHECK_LAUNCH();
    if (dbias != nullptr) {
        bias_gradient_kernel<<<blocks_for(p.out_channels), threads, 0, stream>>>(
            p, p.out_height() * p.out_width(), dy, dbias);
        FFTCONV_CHECK_LAUNCH();
    }
}

void direct_conv_gpu(const problem& p, const float* x, const float* w, double* y, cudaStream_t stream,
                     const float* bias) {
    validate(p);
    direct_conv_kernel<<<blocks_for(p.output_elements()), threads, 0, stream>>>(
        p, p.out_height(), p.out_width(), p.output_elements(), x, w, bias, y);
    FFTCONV_CHECK_LAUNCH();
}

std::vector<double> direct_conv_cpu(const problem& p, const std::vector<float>& x, const std::vector<float>& w,
                                    const std::vector<float>* bias) {
    validate(p);
    const auto require_size = [](const char* name, std::size_t size, std::int64_t expected) {
        if (size != std::size_t(expected))
            detail::throw_invalid(std::string("fftconv::reference::direct_conv_cpu: ") + name + " has " +
                                  std::to_string(size) + " elements, the problem needs " +
                                  std::to_string(expected));
    };
    require_size("x", x.size(), p.input_elements());
    require_size("w", w.size(), p.filter_elements());
    if (bias) require_size("bias", bias->size(), p.out_channels);
    std::vector<double> y(std::size_t(p.output_elements()));
    std::size_t idx = 0;
    for (std::int64_t b = 0; b < p.batch; ++b)
        for (std::int64_t o = 0; o < p.out_channels; ++o)
            for (std::int64_t i = 0; i < p.out_height(); ++i)
                for (std::int64_t j = 0; j < p.out_width(); ++j)
                    y[idx++] = output_at(p, x.data(), w.data(), bias ? bias->data() : nullptr, b, o, i, j);
    return y;
}

void fill_normal(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
    normal_kernel<<<blocks_for(n), threads, 0, stream>>>(device, n, seed);
    FFTCONV_CHECK_LAUNCH();
}

void fill_uniform(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
    uniform_kernel<<<blocks_for(n), threads, 0, stream>>>(device, n, seed);
    FFTCONV_CHECK_LAUNCH();
}

void fill_input(input_kind kind, float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream) {
    if (kind == input_kind::normal) fill_normal(device, n, seed, stream);
    else fill_uniform(device, n, seed, stream);
}

const char* to_string(input_kind kind) noexcept {
    return kind == input_kind::normal ? "normal(0,1)" : "uniform[0,1)";
}

void direct_conv_gpu_sampled(const problem& p, const float* x, const float* w, const std::int64_t* indices,
                             std::int64_t count, double* y, cudaStream_t stream, const float* bias) {
    validate(p);
    for (std::int64_t first = 0; first < count; first += std::int64_t{1} << 30) {
        const std::int64_t n = std::min(count - first, std::int64_t{1} << 30);
        sampled_conv_kernel<<<unsigned(n), threads, 0, stream>>>(p, p.out_height(), p.out_width(),
                                                                 indices + first, n, x, w, bias, y + first);
        FFTCONV_CHECK_LAUNCH();
    }
}

void fill_nan(float* device, std::int64_t n, cudaStream_t stream) {
    nan_kernel<<<blocks_for(n), threads, 0, stream>>>(device, n);
    FFTCONV_CHECK_LAUNCH();
}

accuracy compare(const std::vector<float>& y, const std::vector<double>& exact) {
    accuracy a;
    if (y.size() != exact.size()) {
        a.non_finite = std::int64_t(std::max(y.size(), exact.size()));
        return a;
    }
    double error_sq = 0, exact_sq = 0;
    for (std::size_t k = 0; k < y.size(); ++k) {
        if (!std::isfinite(y[k])) {
            ++a.non_finite;
            continue;
        }
        const double diff = double(y[k]) - exact[k];
        error_sq += diff * diff;
        exact_sq += exact[k] * exact[k];
        const double fraction = std::abs(diff) / (absolute_tolerance + relative_tolerance * std::abs(exact[k]));
        if (fraction > a.worst_fraction) {
            a.worst_fraction = fraction;
            a.worst_index = std::int64_t(k);
        }
    }
    a.relative_l2 = exact_sq > 0 ? std::sqrt(error_sq / exact_sq) : std::sqrt(error_sq);
    if (a.non_finite > 0) a.relative_l2 = std::numeric_limits<double>::infinity();
    return a;
}

template <class T>
static std::vector<T> copy_to_host(const T* device, std::int64_t n) {
    std::vector<T> host(static_cast<std::size_t>(n));
    FFTCONV_CUDA_TRY(cudaMemcpy(host.data(), device, sizeof(T) * std::size_t(n), cudaMemcpyDeviceToHost));
    return host;
}

std::vector<float> to_host(const float* device, std::int64_t n) { return copy_to_host(device, n); }
std::vector<double> to_host(const double* device, std::int64_t n) { return copy_to_host(device, n); }

}  // namespace fftconv::reference
