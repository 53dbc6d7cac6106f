// fftconv/detail/runtime/launch.cuh — the one way fftconv launches a kernel:
// record it (when a test asks), launch it, check the launch.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <cuda_runtime_api.h>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/launch.hpp"

namespace fftconv::detail {

// Blocks of `threads` for a grid-stride kernel over `total` items: enough to
// cover them, at least one, never more than 2^20 (the kernel loops over the
// rest; far below the hardware's grid limit).
inline unsigned grid_stride_blocks(std::int64_t total, int threads) {
    return unsigned(std::clamp<std::int64_t>((total + threads - 1) / threads, 1, std::int64_t{1} << 20));
}

// Opts a kernel in to more than 48 KiB of dynamic shared memory (on the
// current device: cheap enough to repeat at every launch).
template <class Kernel>
void allow_shared_bytes(Kernel kernel, std::size_t bytes) {
    if (bytes > 48 * 1024)
        FFTCONV_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
}

// Launches `kernel` on `stream` and checks the launch, without recording
// it: for a kernel whose launcher is recorded in its place (the spectral
// GEMM's launcher picks one of several kernels at run time; tests ask which
// launcher ran).
template <class... Params, class... Args>
void launch_unrecorded(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes,
                       cudaStream_t stream, Args&&... args) {
    kernel<<<grid, block, shared_bytes, stream>>>(std::forward<Args>(args)...);
    FFTCONV_CHECK_LAUNCH();
}

// Records `kernel` (launch.hpp), launches it on `stream`, checks the launch.
template <class... Params, class... Args>
void launch(void (*kernel)(Params...), dim3 grid, dim3 block, std::size_t shared_bytes, cudaStream_t stream,
            Args&&... args) {
    record_launch(reinterpret_cast<const void*>(kernel));
    launch_unrecorded(kernel, grid, block, shared_bytes, stream, std::forward<Args>(args)...);
}

}  // namespace fftconv::detail
