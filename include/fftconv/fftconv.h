/* fftconv/fftconv.h — the C ABI of fftconv (built into libfftconv).
 *
 * Semantics: PyTorch F.conv2d, stride 1, no padding, no dilation, no bias:
 *   y[b, o, i, j] = sum_{c, u, v} x[b, c, i + u, j + v] * w[o, c, u, v]
 * x float32 [batch, in_channels, height, width], w float32 [out_channels,
 * in_channels, kernel_extent, kernel_extent], y float32 [batch, out_channels,
 * height - kernel_extent + 1, width - kernel_extent + 1]; dense NCHW, device memory.
 *
 * Every function returns a status. On failure fftconv_last_error() returns a
 * message naming what was wrong (per thread, valid until this thread's next
 * fftconv call). FFTCONV_INVALID_ARGUMENT and FFTCONV_OUT_OF_MEMORY mean
 * nothing was enqueued and y is untouched; after a CUDA, cuFFT or cuBLAS
 * error raised by work already enqueued, y may hold partial results.
 *
 * Each call checks first that the context's device is current, that no CUDA
 * error from earlier work is pending (it is left in place and named), and
 * that x, w, y are device memory of that device, large enough.
 *
 * Threads: a context is not thread-safe; use one per thread (or serialize
 * the calls). Different contexts may be used from different threads at once.
 * Memory: problems larger than the workspace limit run in passes within it
 * (fftconv_set_workspace_limit); fftconv_release frees the cached plans and
 * workspace. CUDA graphs: call fftconv_reserve for a problem before capturing
 * a call on it; graphs stay valid until fftconv_release.
 *
 *   fftconv_context ctx;
 *   fftconv_problem p = {batch, in_channels, out_channels, height, width, kernel_extent};
 *   if (fftconv_create(&ctx, stream) != FFTCONV_SUCCESS) puts(fftconv_last_error());
 *   fftconv_conv2d(ctx, &p, x, w, y);   (enqueued on `stream`; does not synchronize)
 *   fftconv_destroy(ctx);
 */
#ifndef FFTCONV_FFTCONV_H
#define FFTCONV_FFTCONV_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fftconv_status {
    FFTCONV_SUCCESS = 0,
    FFTCONV_INVALID_ARGUMENT = 1, /* a problem field, pointer or option is out of range */
    FFTCONV_CUDA_ERROR = 2,       /* a CUDA runtime call failed */
    FFTCONV_CUFFT_ERROR = 3,      /* a cuFFT call failed */
    FFTCONV_CUBLAS_ERROR = 4,     /* a cuBLAS call failed */
    FFTCONV_OUT_OF_MEMORY = 5,    /* a device allocation failed */
    FFTCONV_INTERNAL_ERROR = 6    /* anything else */
} fftconv_status;

typedef struct fftconv_problem {
    int64_t batch;
    int64_t in_channels;
    int64_t out_channels;
    int64_t height;
    int64_t width;
    int64_t kernel_extent;
} fftconv_problem;

/* Opaque: owns a cuBLAS handle, cached cuFFT plans and a device workspace. */
typedef struct fftconv_context_t* fftconv_context;

/* Makes a context on the current CUDA device whose work runs on `stream` (NULL: default stream).
 * On failure *context is set to NULL. */
fftconv_status fftconv_create(fftconv_context* context, cudaStream_t stream);
/* Releases everything the context owns. NULL is accepted. */
fftconv_status fftconv_destroy(fftconv_context context);
/* Later calls run on `stream`, ordered after the work already enqueued on the old one. */
fftconv_status fftconv_set_stream(fftconv_context context, cudaStream_t stream);

/* The most device memory the workspace may take (default SIZE_MAX: the device's free memory). */
fftconv_status fftconv_set_workspace_limit(fftconv_context context, size_t bytes);
/* Waits for the context's work, then frees its workspace and cached cuFFT plans. */
fftconv_status fftconv_release(fftconv_context context);

/* Device bytes of workspace a call on `problem` will use, under the workspace limit. */
fftconv_status fftconv_workspace_size(fftconv_context context, const fftconv_problem* problem,
                                      size_t* bytes);
/* Makes plans and workspace for `problem` now (call before capturing a CUDA graph). */
fftconv_status fftconv_reserve(fftconv_context context, const fftconv_problem* problem);

/* y = conv2d(x, w), enqueued on the context's stream. */
fftconv_status fftconv_conv2d(fftconv_context context, const fftconv_problem* problem,
                              const float* x, const float* w, float* y);

/* The message of this thread's last failed call ("" if none). */
const char* fftconv_last_error(void);
/* "success", "invalid_argument", ... */
const char* fftconv_status_string(fftconv_status status);

#ifdef __cplusplus
}
#endif

#endif /* FFTCONV_FFTCONV_H */
