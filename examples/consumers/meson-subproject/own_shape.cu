// examples/consumers/meson-subproject/own_shape.cu — an application's own
// compile-time configuration: fftconv's pipeline instantiated in this
// translation unit for a shape the library was not built with (7 x 7
// filters, 12 channels, 32-point tiles), added to a context. Host checks
// need no GPU; with one it runs the shape through the registered
// configuration and checks every output. Exit 0 when all hold, 1 otherwise.
#include <cstdio>
#include <vector>

#include <fftconv/specialize.cuh>

constexpr fftconv::tile_config own_shape{.kernel_extent = 7, .channels = 12, .tile_extent = 32};

__global__ void fill(float* data, long long n, float value) {
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x)
        data[i] = value;
}

int main() {
    int failures = 0;
    std::printf("fftconv %s\n", fftconv::version_string());
    failures += fftconv::version() != fftconv::header_version;
    const fftconv::specialization s = fftconv::specialize<own_shape>();
    const std::vector<const void*> kernels = s.kernels();
    int null_kernels = 0;
    for (const void* k : kernels) null_kernels += k == nullptr;
    std::printf("specialize<{7, 12, 32}>: %zu kernels compiled here, %d null\n", kernels.size(), null_kernels);
    failures += kernels.empty() || null_kernels != 0 || !(s.config == own_shape);
    const fftconv::problem p{.batch = 2, .in_channels = 12, .out_channels = 12, .height = 40, .width = 37,
                             .kernel = 7};
    failures += !fftconv::matches(own_shape, p);

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
        fftconv::context ctx;
        ctx.add_specialization(s);
        const fftconv::dispatch_decision d = ctx.plan(p);
        std::printf("plan: %s path\n", fftconv::to_string(d.path));
        failures += d.path != fftconv::path_kind::registered;
        ctx.conv2d(p, x, w, y);
        std::vector<float> out(p.output_elements());
        failures += cudaMemcpy(out.data(), y, sizeof(float) * out.size(), cudaMemcpyDeviceToHost) != cudaSuccess;
        const float expected = 7.0f * 7.0f * 12.0f;
        int wrong = 0;
        for (float value : out) wrong += !(value > expected - 1e-2f && value < expected + 1e-2f);
        std::printf("conv2d of ones through the registered configuration: %d of %zu outputs differ from %g\n",
                    wrong, out.size(), expected);
        failures += wrong != 0;
    } catch (const fftconv::error& e) {
        std::printf("FAIL: %s\n", e.what());
        ++failures;
    }
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    return failures ? 1 : 0;
}
