// examples/consumers/use_fftconv.cu — a CUDA translation unit of an
// application: its own kernel beside fftconv's C++ API, compiled by nvcc
// with -std=c++20 (CMake: the imported target sets it; pkg-config: on the
// command line). Host checks need no GPU; with one it runs a convolution of
// ones and checks every output. Exit 0 when every check holds, 1 otherwise.
#include <cstdio>
#include <vector>

#include <cuda_runtime.h>
#include <fftconv/fftconv.hpp>

__global__ void fill(float* data, long long n, float value) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        data[i] = value;
}

int main() {
    int failures = 0;
    const fftconv::version_info v = fftconv::version();
    std::printf("fftconv %s (headers %d.%d.%d)\n", fftconv::version_string(), FFTCONV_VERSION_MAJOR,
                FFTCONV_VERSION_MINOR, FFTCONV_VERSION_PATCH);
    if (v != fftconv::header_version) {
        std::printf("FAIL: the library is %d.%d.%d, the headers %s\n", v.major, v.minor, v.patch,
                    FFTCONV_VERSION_STRING);
        ++failures;
    }
    const fftconv::problem p{.batch = 2, .in_channels = 3, .out_channels = 4, .height = 33, .width = 30,
                             .kernel = 7};
    const fftconv::dispatch_decision d = fftconv::choose_dispatch(p);
    std::printf("plan for %s: %s path, tile extent %d\n", fftconv::to_string(p).c_str(),
                fftconv::to_string(d.path), d.geometry.tile_extent());
    if (d.geometry.tile_extent() < 7) ++failures;

    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no CUDA device: the GPU part is skipped\n");
        return failures ? 1 : 0;
    }
    float *x = nullptr, *w = nullptr, *y = nullptr;
    if (cudaMalloc(&x, sizeof(float) * p.input_elements()) != cudaSuccess ||
        cudaMalloc(&w, sizeof(float) * p.filter_elements()) != cudaSuccess ||
        cudaMalloc(&y, sizeof(float) * p.output_elements()) != cudaSuccess) {
        std::printf("FAIL: cudaMalloc\n");
        return 1;
    }
    fill<<<64, 256>>>(x, p.input_elements(), 1.0f);
    fill<<<64, 256>>>(w, p.filter_elements(), 1.0f);
    try {
        fftconv::context ctx;  // default stream, after the fills
        ctx.conv2d(p, x, w, y);
        std::vector<float> out(p.output_elements());
        if (cudaMemcpy(out.data(), y, sizeof(float) * out.size(), cudaMemcpyDeviceToHost) != cudaSuccess) {
            std::printf("FAIL: cudaMemcpy\n");
            ++failures;
        }
        const float expected = 7.0f * 7.0f * 3.0f;  // every output sees K x K x Cin ones
        int wrong = 0;
        for (float value : out) wrong += !(value > expected - 1e-2f && value < expected + 1e-2f);
        std::printf("conv2d of ones on the GPU: %d of %zu outputs differ from %g\n", wrong, out.size(), expected);
        failures += wrong != 0;
    } catch (const fftconv::error& e) {
        std::printf("FAIL: conv2d: %s\n", e.what());
        ++failures;
    }
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    return failures ? 1 : 0;
}
