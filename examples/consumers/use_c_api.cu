// examples/consumers/use_c_api.cu — fftconv's C ABI from a CUDA file built
// with nvcc's own default standard (no -std): fftconv/fftconv.h needs no
// C++20. Exit 0 when every check holds (the GPU part skipped without a
// GPU), 1 otherwise.
#include <cstdio>
#include <cstring>

#include <fftconv/fftconv.h>

__global__ void fill(float* data, int n, float value) {
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) data[i] = value;
}

int main() {
    std::printf("fftconv %s, FFTCONV_VERSION %d, __cplusplus %ld\n", fftconv_version_string(), fftconv_version(),
                static_cast<long>(__cplusplus));
    int failures = fftconv_version() != FFTCONV_VERSION;
    failures += std::strcmp(fftconv_version_string(), FFTCONV_VERSION_STRING) != 0;
    failures += std::strcmp(fftconv_status_string(FFTCONV_INVALID_ARGUMENT), "invalid_argument") != 0;

    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no CUDA device: the GPU part is skipped\n");
        return failures ? 1 : 0;
    }
    fftconv_context ctx;
    if (fftconv_create(&ctx, nullptr) != FFTCONV_SUCCESS) {
        std::printf("FAIL: %s\n", fftconv_last_error());
        return 1;
    }
    fftconv_problem p = {1, 2, 2, 20, 20, 5};  // y: 2 x 16 x 16
    float *x = nullptr, *w = nullptr, *y = nullptr;
    cudaMalloc(&x, sizeof(float) * 2 * 20 * 20);
    cudaMalloc(&w, sizeof(float) * 2 * 2 * 5 * 5);
    cudaMalloc(&y, sizeof(float) * 2 * 16 * 16);
    fill<<<8, 128>>>(x, 2 * 20 * 20, 1.0f);
    fill<<<8, 128>>>(w, 2 * 2 * 5 * 5, 1.0f);
    float out[2 * 16 * 16];
    if (fftconv_conv2d(ctx, &p, x, w, y) != FFTCONV_SUCCESS ||
        cudaMemcpy(out, y, sizeof out, cudaMemcpyDeviceToHost) != cudaSuccess) {
        std::printf("FAIL: %s\n", fftconv_last_error());
        ++failures;
    } else {
        int wrong = 0;
        for (float value : out) wrong += !(value > 50.0f - 1e-3f && value < 50.0f + 1e-3f);  // 5 x 5 x 2 ones
        std::printf("conv2d of ones: %d outputs differ from 50\n", wrong);
        failures += wrong != 0;
    }
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    fftconv_destroy(ctx);
    return failures ? 1 : 0;
}
