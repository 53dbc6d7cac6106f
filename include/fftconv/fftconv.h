/* fftconv/fftconv.h — the C ABI of fftconv (built into libfftconv).
 *
 * Semantics: PyTorch F.conv2d(x, w, bias, stride=1, padding=(pad_height,
 * pad_width), groups=groups) (fftconv/problem.hpp has the formula):
 * x float32 [batch, in_channels, height, width], w float32 [out_channels,
 * in_channels / groups, kernel_height, kernel_width], bias float32
 * [out_channels] or NULL, y float32 [batch, out_channels, height + 2 pad_height
 * - kernel_height + 1, width + 2 pad_width - kernel_width + 1]; dense NCHW,
 * device memory. fftconv_problem (square kernel, no padding, groups 1, no
 * bias) is the first version of the problem description and keeps working;
 * fftconv_conv2d_desc describes the whole operator.
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
 * a call on it; graphs stay valid until fftconv_release. A forward call
 * repeated with the same problem and pointers is replayed by the context as a
 * CUDA graph of its own from its third call on (fftconv_set_replay).
 *
 *   fftconv_context ctx;
 *   fftconv_conv2d_desc d = FFTCONV_CONV2D_DESC_INIT;   (struct_size set, defaults)
 *   d.batch = 8; d.in_channels = d.out_channels = d.groups = 128;   (depthwise)
 *   d.height = d.width = 56; d.kernel_height = d.kernel_width = 31;
 *   d.pad_height = d.pad_width = 15;                                 ('same')
 *   if (fftconv_create(&ctx, stream) != FFTCONV_SUCCESS) puts(fftconv_last_error());
 *   fftconv_conv2d_ex(ctx, &d, x, w, bias, y);   (enqueued on `stream`; does not synchronize)
 *   fftconv_destroy(ctx);
 */
#ifndef FFTCONV_FFTCONV_H
#define FFTCONV_FFTCONV_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "fftconv/version.h" /* FFTCONV_VERSION_*, fftconv_version() */

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

/* The whole operator. struct_size makes it extensible: set it to
 * sizeof(fftconv_conv2d_desc) (FFTCONV_CONV2D_DESC_INIT does). A library built
 * with a later, longer version reads the fields this one has and takes the
 * defaults for the rest; a library older than the caller's header refuses a
 * longer description (it never reads past the bytes it knows). */
typedef struct fftconv_conv2d_desc {
    size_t struct_size;
    int64_t batch;
    int64_t in_channels;
    int64_t out_channels;
    int64_t height;
    int64_t width;
    int64_t kernel_height;
    int64_t kernel_width;
    int64_t pad_height;  /* zeros above and below */
    int64_t pad_width;   /* zeros left and right */
    int64_t groups;      /* divides in_channels and out_channels */
    int64_t stride;      /* must be 1 */
    int64_t dilation;    /* must be 1 */
} fftconv_conv2d_desc;

#define FFTCONV_CONV2D_DESC_INIT \
    { sizeof(fftconv_conv2d_desc), 1, 1, 1, 1, 1, 1, 1, 0, 0, 1, 1, 1 }

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
/* Nonzero (the default): forward calls seen before with the same problem and
 * pointers replay as CUDA graphs (one launch instead of one per kernel; same
 * results). Zero: every call launches its kernels. */
fftconv_status fftconv_set_replay(fftconv_context context, int enabled);
/* Later workspace allocations of `context` call allocate(state, bytes, stream)
 * (NULL: it has none) and give memory back with deallocate(state, pointer,
 * bytes, stream) once no work of the context uses it; both NULL restore
 * cudaMalloc. What the context holds is given back first (as fftconv_release). */
fftconv_status fftconv_set_workspace_allocator(fftconv_context context,
                                               void* (*allocate)(void* state, size_t bytes, cudaStream_t stream),
                                               void (*deallocate)(void* state, void* pointer, size_t bytes,
                                                                  cudaStream_t stream),
                                               void* state);

/* Device bytes of workspace a call on `problem` will use at most, under the workspace limit (the C++
 * API's size: it also covers a call through a filter spectrum, which under a limit may run in
 * passes of another shape). */
fftconv_status fftconv_workspace_size(fftconv_context context, const fftconv_problem* problem,
                                      size_t* bytes);
/* Makes plans and workspace for `problem` now (call before capturing a CUDA graph). */
fftconv_status fftconv_reserve(fftconv_context context, const fftconv_problem* problem);

/* y = conv2d(x, w), enqueued on the context's stream. */
fftconv_status fftconv_conv2d(fftconv_context context, const fftconv_problem* problem,
                              const float* x, const float* w, float* y);

/* The same for the whole operator; bias may be NULL. */
fftconv_status fftconv_workspace_size_ex(fftconv_context context, const fftconv_conv2d_desc* desc,
                                         size_t* bytes);
fftconv_status fftconv_reserve_ex(fftconv_context context, const fftconv_conv2d_desc* desc);
fftconv_status fftconv_conv2d_ex(fftconv_context context, const fftconv_conv2d_desc* desc,
                                 const float* x, const float* w, const float* bias, float* y);

/* Training: the gradients of y = conv2d(x, w) + bias for the same desc, given
 * dy (y's gradient). dx gets x's shape, dw w's, dbias out_channels floats
 * (NULL: not computed); written, not accumulated. Enqueued on the context's
 * stream like conv2d. fftconv_reserve_backward_ex prepares both (before
 * capturing a CUDA graph). */
fftconv_status fftconv_conv2d_backward_data_ex(fftconv_context context, const fftconv_conv2d_desc* desc,
                                               const float* dy, const float* w, float* dx);
fftconv_status fftconv_conv2d_backward_filter_ex(fftconv_context context, const fftconv_conv2d_desc* desc,
                                                 const float* x, const float* dy, float* dw, float* dbias);
fftconv_status fftconv_reserve_backward_ex(fftconv_context context, const fftconv_conv2d_desc* desc);

/* Activations of another element type: x and y (dy and dx) both of
 * `element_type`, 2-byte elements for bfloat16 and float16; w and bias stay
 * float. fftconv computes in FP32 (half inputs widen exactly) and rounds
 * each output once, to nearest. */
typedef enum fftconv_element_type {
    FFTCONV_FLOAT32 = 0,
    FFTCONV_BFLOAT16 = 1,
    FFTCONV_FLOAT16 = 2
} fftconv_element_type;
fftconv_status fftconv_conv2d_typed(fftconv_context context, const fftconv_conv2d_desc* desc,
                                    fftconv_element_type element_type, const void* x, const float* w,
                                    const float* bias, void* y);
fftconv_status fftconv_conv2d_backward_data_typed(fftconv_context context, const fftconv_conv2d_desc* desc,
                                                  fftconv_element_type element_type, const void* dy,
                                                  const float* w, void* dx);

/* The message of this thread's last failed call ("" if none). */
const char* fftconv_last_error(void);
/* "success", "invalid_argument", ... */
const char* fftconv_status_string(fftconv_status status);

#ifdef __cplusplus
}
#endif

#endif /* FFTCONV_FFTCONV_H */
