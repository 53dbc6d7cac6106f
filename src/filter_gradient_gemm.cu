// src/filter_gradient_gemm.cu — see filter_gradient_gemm.hpp.
//
// Per chunk of positions [first, first + count): tile n = channel * stride +
// q of the chunk (stride = count rounded up to even, so a transform pair
// never spans two channels). X is [bin][c][q], D [bin][o][q]; per bin and
// group the GEMM
//   out (Og x Cg, column-major, ld = slots) = D^H (Og x stride) X (stride x Cg)
// gives out[c * slots + o] = sum_q X_c[q] conj(D_o[q]), slots = Cout rounded
// up to even (the spare slot zero), so the inverse transform's pairs are
// (c, o) and (c, o ^ 1): a non-finite value in x's channel c or dy's channel
// o reaches dw[o][c] whole (the transforms spread it over the taps), and at
// most dw[o ^ 1][c] besides. Chunks after the first are summed in double
// (sum_chunks): their count grows with batch x blocks. D carries the
// inverse's 1/T^2. cuBLAS's FP32 CGEMM (FFMA, never TF32: the engine's math
// mode).
#include "filter_gradient_gemm.hpp"

#include <algorithm>
#include <climits>

#include <cublas_v2.h>

#include "fftconv/config.hpp"
#include "fftconv/detail/check.hpp"
#include "fftconv/detail/fused_tile_fft.cuh"
#include "fftconv/detail/workspace_layout.hpp"
#include "gradient_positions.hpp"

namespace fftconv::detail {

namespace {

constexpr std::int64_t budget = std::int64_t{1} << 30;  // bytes: the chunk's X and D; the gradient's spectrum

// Positions per GEMM at most: cuBLAS's FP32 GEMM accumulates its depth in
// float, and a chunk's result is added to the running sum (beta = 1), so
// capping the depth keeps the rounding of a deep sum (batch x blocks can
// reach thousands) near that of a hundred terms. On the 32-point grid (5x
// the positions of the 64-point one) the random sweep's worst filter
// gradient reached relative L2 7.4e-7 and an element at 0.99 of its
// tolerance with chunks of 512, against 4.3e-7 and 0.25 on the 64-point grid
// (results/training-502f2da/sweep-worst-elements.log).
constexpr std::int64_t max_chunk = 128;

// The grid: 32 points where kernels up to 8 leave blocks of 25 on it, else
// 64. At 128² K8 C64 B4 (ncu, results/gradient-profile-6ca6588) the 64-point
// grid spent a third of the call in 4096 inverse transforms of 64² for
// 8 x 8 outputs each; on 32² they cost a quarter, and a 32² transform costs
// less per point (3.8 against 5.5 ps at ncu's clocks), for 1.4x the points.
int tile_of(const problem& p) {
    return p.kernel.height <= 32 + 1 - min_block && p.kernel.width <= 32 + 1 - min_block ? 32 : 64;
}

constexpr std::int64_t bins_of(int tile) { return std::int64_t{tile} * (tile / 2 + 1); }

// Tile n = channel * stride + q: position first + q's window of x (of_x) or
// block of dy, empty for q >= count.
template <bool of_x>
struct position_tiles {
    gradient_positions at;
    const float* tensor;
    std::int64_t first, count, stride;
    float scale;
    __device__ tile_window window(std::int64_t n) const {
        const std::int64_t channel = n / stride, q = n % stride;
        if (q >= count) return tile_window{};
        return of_x ? at.x_window(channel, first + q) : at.dy_block(channel, first + q);
    }
    __device__ const float* data() const { return tensor; }
};

constexpr std::int64_t round_up(std::int64_t n, std::int64_t multiple) { return ceil_div(n, multiple) * multiple; }

struct gemm_plan {
    std::int64_t chunk, chunks;                    // positions per chunk (even), chunks
    std::int64_t slots;                            // output channel slots per input channel: Cout rounded up to even
    std::int64_t x_stride, dy_stride, out_stride;  // bin strides of X, D and out (multiples of 4)
    std::size_t dy_offset, out_offset, sum_offset, bytes;  // X at 0; the double sum only with several chunks
};

gemm_plan plan_of(const problem& p) {
    gemm_plan g{};
    const int tile = tile_of(p);
    const std::int64_t bins = bins_of(tile);
    const std::int64_t per_position = bins * std::int64_t(sizeof(float2)) * (p.in_channels + p.out_channels);
    g.chunk = std::clamp<std::int64_t>(std::min(budget / per_position / 2 * 2, max_chunk), 2,
                                       round_up(positions_of(p, tile).count(), 2));
    g.chunks = ceil_div(positions_of(p, tile).count(), g.chunk);
    g.slots = round_up(p.out_channels, 2);
    g.x_stride = round_up(p.in_channels * g.chunk, 4);
    g.dy_stride = round_up(p.out_channels * g.chunk, 4);
    g.out_stride = round_up(p.group_in_channels() * g.slots, 4);
    g.dy_offset = align_up(sizeof(float2) * std::size_t(bins * g.x_stride));
    g.out_offset = g.dy_offset + align_up(sizeof(float2) * std::size_t(bins * g.dy_stride));
    g.sum_offset = g.out_offset + align_up(sizeof(float2) * std::size_t(bins * g.out_stride));
    g.bytes = g.sum_offset + (g.chunks > 1 ? align_up(sizeof(double2) * std::size_t(bins * g.out_stride)) : 0);
    return g;
}

// sum (double) = out for the first chunk, sum += out after it; with `last`,
// out = sum rounded to float for the inverse transform.
__global__ void sum_chunks(float2* __restrict__ out, double2* __restrict__ sum, std::int64_t total, bool first,
                           bool last) {
    for (std::int64_t t = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; t < total;
         t += std::int64_t(gridDim.x) * blockDim.x) {
        const float2 v = out[t];
        double2 s = first ? double2{0.0, 0.0} : sum[t];
        s.x += v.x;
        s.y += v.y;
        if (last) out[t] = float2{float(s.x), float(s.y)};
        else sum[t] = s;
    }
}

template <int T>
void run_gemm(engine& e, const problem& p, const float* x, const float* dy, float* transposed, void* scratch) {
    using geometry = tile_geometry<dynamic_extent, dynamic_extent, T>;
    constexpr std::int64_t bins = bins_of(T);
    const gemm_plan g = plan_of(p);
    const gradient_positions at = positions_of(p, T);
    auto* base = static_cast<char*>(scratch);
    auto* xs = reinterpret_cast<float2*>(base);
    auto* ds = reinterpret_cast<float2*>(base + g.dy_offset);
    auto* out = reinterpret_cast<float2*>(base + g.out_offset);
    auto* sum = reinterpret_cast<double2*>(base + g.sum_offset);
    if (g.slots != p.out_channels)  // the spare slot, never written by the GEMM, pairs with the last channel
        FFTCONV_CUDA_TRY(cudaMemsetAsync(out, 0, sizeof(float2) * std::size_t(bins * g.out_stride), e.stream()));
    const std::int64_t cg = p.group_in_channels(), og = p.group_out_channels();
    const geometry geo(T + 1 - p.kernel.height, T + 1 - p.kernel.width, p.in_channels, p.out_channels, T);
    const float scale = 1.0f / float(T * T);
    for (std::int64_t first = 0; first < at.count(); first += g.chunk) {
        const std::int64_t count = std::min(g.chunk, at.count() - first), stride = round_up(count, 2);
        // dy's transform beside x's: neither fills the GPU alone on small problems.
        side_branch side(e, true);
        launch_forward_tiles<geometry>(e, position_tiles<false>{at, dy, first, count, stride, scale},
                                       p.out_channels * stride, g.dy_stride, ds, side.stream());
        launch_forward_tiles<geometry>(e, position_tiles<true>{at, x, first, count, stride, 1.0f},
                                       p.in_channels * stride, g.x_stride, xs, e.stream());
        side.join();
        const cuComplex one{1.0f, 0.0f}, zero{0.0f, 0.0f};
        for (std::int64_t group = 0; group < p.groups; ++group)
            FFTCONV_CUBLAS_TRY(cublasCgemmStridedBatched(
                e.blas(), CUBLAS_OP_C, CUBLAS_OP_N, int(og), int(cg), int(stride), &one,
                reinterpret_cast<const cuComplex*>(ds + group * og * stride), int(stride), g.dy_stride,
                reinterpret_cast<const cuComplex*>(xs + group * cg * stride), int(stride), g.x_stride, &zero,
                reinterpret_cast<cuComplex*>(out + group * og), int(g.slots), g.out_stride, int(bins)));
        if (g.chunks > 1) {
            const std::int64_t total = bins * g.out_stride, chunk = first / g.chunk;
            e.log_launch(reinterpret_cast<const void*>(sum_chunks));
            sum_chunks<<<unsigned(std::min<std::int64_t>(ceil_div(total, 256), 1 << 20)), 256, 0, e.stream()>>>(
                out, sum, total, chunk == 0, chunk == g.chunks - 1);
            FFTCONV_CHECK_LAUNCH();
        }
    }
    // Tile n = c * slots + o of the gradient's spectrum -> transposed[c][o]
    // (slot o = Cout, when there is one, writes nothing): image c, tile o of
    // a column of Cout tiles of Kh x Kw.
    const std::int64_t taps = p.kernel.height * p.kernel.width;
    const output_tiles<geometry> sink{geo, transposed, tensor_strides{0, p.out_channels * taps, p.kernel.width},
                                      p.out_channels * p.kernel.height, p.kernel.width,
                                      tile_outputs{int(p.kernel.height), int(p.kernel.width)},
                                      tile_grid{1, 1, p.out_channels, g.slots}, nullptr};
    launch_inverse_tiles<geometry>(e, out, 0, cg * g.slots, g.out_stride, sink, e.stream());
}

}  // namespace

bool fits_filter_gradient_gemm(const problem& p) {
    if (!fits_gradient_tile(p)) return false;
    const gemm_plan g = plan_of(p);
    // cuBLAS takes int extents and leading dimensions.
    return bins_of(tile_of(p)) * g.out_stride * std::int64_t(sizeof(float2)) <= budget &&
           g.slots <= INT_MAX && p.group_in_channels() <= INT_MAX;
}

std::size_t filter_gradient_gemm_scratch(const problem& p) { return plan_of(p).bytes; }

void filter_gradient_gemm(engine& e, const problem& p, const float* x, const float* dy, float* transposed,
                          void* scratch) {
    if (tile_of(p) == 32) run_gemm<32>(e, p, x, dy, transposed, scratch);
    else run_gemm<64>(e, p, x, dy, transposed, scratch);
}

}  // namespace fftconv::detail
