/* examples/c_api.c — fftconv from C: status codes and messages.
 * Exits 77 where there is no GPU. */
#include <stdio.h>

#include <fftconv/fftconv.h>

int main(void) {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        puts("no CUDA device: nothing to run");
        return 77;
    }
    fftconv_context ctx;
    if (fftconv_create(&ctx, NULL) != FFTCONV_SUCCESS) {
        fprintf(stderr, "%s\n", fftconv_last_error());
        return 1;
    }
    fftconv_problem p = {1, 8, 8, 64, 64, 9};
    float *x, *w, *y;
    size_t workspace = 0;
    int ok = cudaMalloc((void**)&x, sizeof(float) * 8 * 64 * 64) == cudaSuccess &&
             cudaMalloc((void**)&w, sizeof(float) * 8 * 8 * 9 * 9) == cudaSuccess &&
             cudaMalloc((void**)&y, sizeof(float) * 8 * 56 * 56) == cudaSuccess &&
             cudaMemset(x, 0, sizeof(float) * 8 * 64 * 64) == cudaSuccess &&
             cudaMemset(w, 0, sizeof(float) * 8 * 8 * 9 * 9) == cudaSuccess;
    ok = ok && fftconv_workspace_size(ctx, &p, &workspace) == FFTCONV_SUCCESS;
    ok = ok && fftconv_conv2d(ctx, &p, x, w, y) == FFTCONV_SUCCESS;
    ok = ok && cudaDeviceSynchronize() == cudaSuccess;
    printf("conv2d: %s (workspace %zu bytes)\n", ok ? "ok" : fftconv_last_error(), workspace);

    /* A kernel larger than the image: a clear error, y untouched. */
    p.kernel_extent = 65;
    fftconv_status s = fftconv_conv2d(ctx, &p, x, w, y);
    printf("bad problem: %s: %s\n", fftconv_status_string(s), fftconv_last_error());
    ok = ok && s == FFTCONV_INVALID_ARGUMENT;

    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    fftconv_destroy(ctx);
    return ok ? 0 : 1;
}
