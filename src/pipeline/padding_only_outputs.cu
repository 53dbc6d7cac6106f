// src/pipeline/padding_only_outputs.cu — see fftconv/detail/pipeline/padding_only_outputs.hpp.
#include <algorithm>

#include "fftconv/detail/kernels/element_access.cuh"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.cuh"
#include "fftconv/detail/pipeline/padding_only_outputs.hpp"

namespace fftconv::detail {

namespace {

// One thread per output row (plane * out_height + row): a padding-only row is
// written whole, any other row only at its padding-only ends.
template <class E>
__global__ void fill_padding_only(E* y, const float* bias, std::int64_t rows, std::int64_t out_channels,
                                  std::int64_t out_height, std::int64_t out_width, std::int64_t edge_rows,
                                  std::int64_t edge_cols) {
    for (std::int64_t r = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; r < rows;
         r += std::int64_t(gridDim.x) * blockDim.x) {
        const std::int64_t row = r % out_height, o = (r / out_height) % out_channels;
        const E value = from_float<E>(bias == nullptr ? 0.0f : bias[o]);
        E* line = y + r * out_width;
        if (row < edge_rows || row >= out_height - edge_rows) {
            for (std::int64_t c = 0; c < out_width; ++c) line[c] = value;
        } else {
            for (std::int64_t c = 0; c < edge_cols; ++c) line[c] = line[out_width - 1 - c] = value;
        }
    }
}

}  // namespace

template <activation_element E>
void write_padding_only_outputs(const problem& p, const float* bias, E* y, cudaStream_t stream) {
    if (!has_padding_only_outputs(p)) return;
    const std::int64_t rows = p.batch * p.out_channels * p.out_height();
    constexpr int threads = 256;
    const unsigned blocks = grid_stride_blocks(rows, threads);
    launch(fill_padding_only<E>, blocks, threads, 0, stream, y, bias, rows, p.out_channels, p.out_height(),
           p.out_width(), padding_only_lines(p.padding.height, p.kernel.height),
           padding_only_lines(p.padding.width, p.kernel.width));
}

template void write_padding_only_outputs(const problem&, const float*, float*, cudaStream_t);
template void write_padding_only_outputs(const problem&, const float*, __nv_bfloat16*, cudaStream_t);
template void write_padding_only_outputs(const problem&, const float*, __half*, cudaStream_t);

}  // namespace fftconv::detail
