// reference/reference.hpp — what fftconv is checked against: an exact
// float64 direct convolution (GPU and CPU), seeded normal inputs drawn on the
// device, and the accuracy measures the tests and the bench report.
// Used by test/ and bench/; not part of the installed library.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime_api.h>

#include "fftconv/detail/runtime/device_buffer.hpp"
#include "fftconv/problem.hpp"

namespace fftconv::reference {

// The float64 conv2d of float inputs, the whole operator of problem.hpp
// (zero padding, groups, rectangular kernels, optional bias):
//   y[b, o, i, j] = bias[o] + sum_{c < Cg, u < kernel.height, v < kernel.width}
//                   x[b, g*Cg + c, i + u - padding.height, j + v - padding.width] * w[o, c, u, v]
// with Cg = in_channels / groups, g = o / (out_channels / groups), reads
// outside the image taken as zero (skipped), and bias[o] taken as 0 when bias
// is null. One thread per output, every product and sum in double, summed in
// the order c, u, v and the bias added last: obviously right, and exact
// enough (relative error ~1e-16) to judge float32 results.
// Device pointers (bias too: out_channels floats, or null); y is
// [B, Cout, Ho, Wo]. Validates p first.
void direct_conv_gpu(const problem& p, const float* x, const float* w, double* y, cudaStream_t stream,
                     const float* bias = nullptr);

// The gradients of direct_conv_gpu's operator for dy = dL/dy, from their
// definitions (not from the data gradient's reformulation as a convolution
// that fftconv uses), every product and sum in double, one thread per
// output element:
//   dx[b, c, h, w]  = sum over o in c's group, u, v of dy[b, o, h + Ph - u, w + Pw - v] * w[o, c - g*Cg, u, v]
//   dw[o, c, u, v]  = sum over b, i, j of dy[b, o, i, j] * x[b, g*Cg + c, i + u - Ph, j + v - Pw]
//   dbias[o]        = sum over b, i, j of dy[b, o, i, j]      (dbias may be null: not computed)
// with positions outside dy or x skipped. Device pointers; validates p.
void data_gradient_gpu(const problem& p, const float* dy, const float* w, double* dx, cudaStream_t stream);
void filter_gradient_gpu(const problem& p, const float* x, const float* dy, double* dw, double* dbias,
                         cudaStream_t stream);

// The same on the CPU, for small problems: host vectors, and the very
// function the GPU kernel runs for each output (reference.cu, output_at),
// looped over b, o, i, j; the device may fuse multiply-adds, so the two agree
// to ~1e-16 relative, not bitwise. bias is a host vector of out_channels
// floats, or null for none. Throws fftconv::error(status::invalid_argument)
// when p is invalid or x, w or *bias has the wrong number of elements.
std::vector<double> direct_conv_cpu(const problem& p, const std::vector<float>& x, const std::vector<float>& w,
                                    const std::vector<float>* bias = nullptr);

// Fills n floats with normal(0, 1) draws that depend only on (seed, index):
// a counter-based hash (splitmix64) feeding Box-Muller.
void fill_normal(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

// Fills n floats with uniform [0, 1) draws (24-bit, exact in float) that
// depend only on (seed, index). Positive data is where a truncation bias in
// a product shows: zero-mean data averages it away.
void fill_uniform(float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);

// The two input distributions every accuracy check runs.
enum class input_kind { normal, uniform };
inline constexpr input_kind input_kinds[] = {input_kind::normal, input_kind::uniform};
void fill_input(input_kind kind, float* device, std::int64_t n, std::uint64_t seed, cudaStream_t stream);
const char* to_string(input_kind kind) noexcept;

// The float64 oracle at `count` output elements only: y[s] is output
// indices[s] (flat [B, Cout, Ho, Wo] index; device arrays), the same operator
// as direct_conv_gpu (bias: device, out_channels floats, or null). One block
// per output and a tree sum, so its order of summation differs from
// direct_conv_gpu's (agreement to ~1e-16 relative, not bitwise).
void direct_conv_gpu_sampled(const problem& p, const float* x, const float* w, const std::int64_t* indices,
                             std::int64_t count, double* y, cudaStream_t stream, const float* bias = nullptr);

// Fills n floats with NaN (the poison an unwritten output shows up as).
void fill_nan(float* device, std::int64_t n, cudaStream_t stream);

// The accuracy bar of the project: every element within
// absolute_tolerance + relative_tolerance * |exact|, and relative L2 <=
// max_relative_l2 (the convolution and its data gradient) or
// max_filter_gradient_l2 (the filter gradient: a sum over every sample and
// position, whose float32 rounding grows with that count).
inline constexpr double absolute_tolerance = 1e-3;
inline constexpr double relative_tolerance = 1e-3;
inline constexpr double max_relative_l2 = 5e-7;
inline constexpr double max_filter_gradient_l2 = 1e-6;

struct accuracy {
    double relative_l2 = 0;       // ||y - exact|| / ||exact||
    double worst_fraction = 0;    // max |y - exact| / (atol + rtol |exact|): <= 1 passes
    std::int64_t worst_index = -1;
    std::int64_t non_finite = 0;  // NaN or Inf elements (an unwritten output is NaN)
    bool passes(double l2_bar = max_relative_l2) const {
        return non_finite == 0 && relative_l2 <= l2_bar && worst_fraction <= 1.0;
    }
};

accuracy compare(const std::vector<float>& y, const std::vector<double>& exact);

// Copies n device elements to a host vector (synchronous).
std::vector<float> to_host(const float* device, std::int64_t n);
std::vector<double> to_host(const double* device, std::int64_t n);

// Device memory for tests and bench, owned (rule of zero).
template <class T>
struct device_array {
    detail::device_buffer memory;
    std::int64_t size = 0;
    T* data() const { return static_cast<T*>(memory.get()); }
};

template <class T>
device_array<T> make_device_array(std::int64_t n) {
    return {detail::allocate_device(std::size_t(n) * sizeof(T), "a reference buffer"), n};
}

}  // namespace fftconv::reference
