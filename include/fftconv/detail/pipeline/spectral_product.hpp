// fftconv/detail/pipeline/spectral_product.hpp — the frequency-domain product of one
// pass: for every bin f and output channel o in [first, last),
//   output_spectrum[f] (M x o) = input_spectrum[f] (M x in) * conj(filter[f]) (in x o)
// FP32 accumulation (never TF32) on the fused path, FP64 on the cuFFT path.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "fftconv/detail/kernels/spectral_gemm.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {

// The filter spectrum a pass multiplies by, stored [bin][in][ld] (ld >= the
// pass's last output channel + column_offset).
struct filter_operand {
    const void* data;            // float2 or double2, as the layout's precision
    std::int64_t column_offset;  // the pass's output channel 0 is column column_offset of each row
    std::int64_t ld;             // distance between consecutive input channels
    std::int64_t bin_stride;     // distance between consecutive bins
};

// Where the filter spectrum of a call comes from: transformed from `w` into
// the workspace, or a filter_spectrum object's (`given`, for all output channels).
struct filter_input {
    const float* w;
    filter_operand given;
};

// The tensor-core GEMM a configuration runs (spectral_gemm.cuh): the dynamic
// one, or one instantiated for its channel count.
using spectral_gemm_launcher = void (*)(const spectral_gemm_args&, cudaStream_t);

// How the channels are grouped (problem::groups): output channel o of the
// whole problem sums over input channels [g * in_per_group, (g + 1) *
// in_per_group) with g = o / out_per_group. first_out is the pass's output
// channel 0 in the whole problem (a pass may cover some output channels).
struct channel_groups {
    std::int64_t count = 1;
    std::int64_t in_per_group = 0;
    std::int64_t out_per_group = 0;
    std::int64_t first_out = 0;
};

// The fused depthwise kernel's filter (fused_depthwise.cuh): the pass's
// output channels' spectra out of `filter` (bin-major; float2, or double2
// on the radix-3 extents: a kept spectrum, context::transform_filter; there
// a fresh filter's DFT writes this order itself, filter_dft.cuh) into
// channel_major[o * bins + bin], so that a column of one channel's bins is
// contiguous (the bin-major layout made every lane of a warp read its own
// cache line); on the radix-3 extents in float, the whole T x T grid in
// digit-reversed order (tile_family::depthwise_filter_bins: T^2 float2 fit in the
// T (T/2 + 1) double2 the layout holds). On the engine's stream.
void channel_major_filter(engine& e, const workspace_layout& t, const filter_operand& filter, void* channel_major);

// Enqueues the product on the engine's stream: one GEMM per group the range
// touches (one in all for groups = 1). `gemm` runs the fused path's products
// where spectral_gemm_pays(); cuBLAS (CGEMM, or ZGEMM on the cuFFT path) runs
// the rest.
void multiply_spectra(engine& e, const workspace_layout& t, const filter_operand& filter,
                      const pipeline_buffers& b, std::int64_t first, std::int64_t last,
                      const channel_groups& groups, spectral_gemm_launcher gemm = &spectral_gemm);

}  // namespace fftconv::detail
