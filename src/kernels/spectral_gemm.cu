// src/kernels/spectral_gemm.cu — the library's spectral GEMM: spectral_gemm_pays and
// spectral_gemm, the dynamic-channel instantiation of the kernel (one for
// every channel count, compiled once here). Interface and the product it
// computes: include/fftconv/detail/kernels/spectral_gemm.hpp; the kernel, how it
// works and the measurements behind its design:
// include/fftconv/detail/kernels/spectral_gemm.cuh, whose spectral_gemm_static<C>
// other translation units instantiate for a compile-time channel count.
#include "fftconv/detail/kernels/spectral_gemm.cuh"

#include "fftconv/detail/kernels/spectral_gemm.hpp"

namespace fftconv::detail {

// Measured on the H200, 2026-11-30 (scratch driver, 50 reps, L2 flushed
// between reps, CUDA events, medians in us; "halves" = the two calls
// [0, C/2), [C/2, C) the pipeline makes), spectral_gemm (the kernel of
// spectral_gemm.cuh) / cublasCgemmStridedBatched FP32. The rows below the leaderboard four ran with 4 k-tile buffers
// instead of 3 (1-3% slower on the leaderboard shapes):
//   rows in=out bins    full            halves
//   100   64    544     46.8 / 60.9     57.6 / 76.1     leaderboard 128^2 K8 C64 B4
//   196   64    544     80.5 / 100.6    91.9 / 116.9    leaderboard 128^2 K16 C64 B4
//    50  128   2112    291.4 / 360.4   298.6 / 369.7    leaderboard 256^2 K16 C128 B2
//    49  128   2112    324.4 / 360.3   333.6 / 369.5    leaderboard 256^2 K32 C128 B1
//    33  128   2112    245.8 / 359.9   253.1 / 368.2
//    40   64   2112     65.2 / 112.3    73.4 / 119.1
//    32   16   2112     13.1 / 17.7     24.2 / 31.5
//    50   32   2112     32.1 / 40.5     53.7 / 73.4
//   100   16    544     12.5 / 17.4     23.4 / 31.3
//   225   17    544     33.1 / 36.2     60.4 / 65.2
//    81  300    544    754.0 / 814.8   957.2 / 946.9   (halves: 1% slower)
//    16   64   2112     54.5 / 59.9     60.6 / 70.9     (excluded: rows < 32)
//    25   64   2112     65.8 / 61.2     72.2 / 72.4     slower: 25 rows pad to 32
//    64    8   2112     20.9 / 20.5     41.8 / 35.6     slower: K = 8 is one k-step
//     7    3    100      5.7 / 5.1       5.7 / 5.9      slower: launch-bound
// Hence: at least 32 rows and 16 input channels, and (since the "halves" of 64
// channels ran on a 32-channel CTA variant no longer built) more than 32 channels.
bool spectral_gemm_pays(const spectral_gemm_args& a) {
    // Ranges of 32 channels or fewer: the 64-channel CTA computes half
    // padding there and measured slower than cuBLAS (90 vs 76 us, C64 halves).
    return a.rows >= 32 && a.in_channels >= 16 && a.last_out - a.first_out > 32;
}

void spectral_gemm(const spectral_gemm_args& a, cudaStream_t stream) { spectral_gemm_static<0>(a, stream); }

}  // namespace fftconv::detail
