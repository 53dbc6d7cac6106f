// examples/consumers/use_fftconv.cpp — a C++ program that uses an installed
// fftconv the way an application would. It needs no GPU: planning and
// validation are host-only; with a GPU it also runs one small convolution.
// Exit 0 when every check holds, 1 otherwise.
#include <cstdio>
#include <string>

#include <cuda_runtime_api.h>
#include <fftconv/fftconv.h>
#include <fftconv/fftconv.hpp>

int main() {
    int failures = 0;
    std::printf("fftconv %s (headers %s)\n", fftconv::version_string(), FFTCONV_VERSION_STRING);
    if (fftconv::version() != fftconv::header_version || fftconv_version() != FFTCONV_VERSION) {
        std::printf("FAIL: the library's version is not the headers'\n");
        ++failures;
    }
    const fftconv::problem p{.batch = 1, .in_channels = 4, .out_channels = 8,
                             .height = 40, .width = 36, .kernel = 5};
    const fftconv::dispatch_decision d = fftconv::choose_dispatch(p);
    std::printf("plan for %s: %s path, tile extent %d\n", fftconv::to_string(p).c_str(),
                fftconv::to_string(d.path), d.geometry.tile_extent());
    if (d.geometry.tile_extent() < p.kernel.height) {
        std::printf("FAIL: tile extent %d is smaller than the kernel %lld\n", d.geometry.tile_extent(),
                    static_cast<long long>(p.kernel.height));
        ++failures;
    }

    fftconv::problem bad = p;
    bad.kernel = 41;  // larger than the image
    try {
        fftconv::validate(bad);
        std::printf("FAIL: a 41 x 41 kernel on a 40 x 36 image was accepted\n");
        ++failures;
    } catch (const fftconv::error& e) {
        const bool named = std::string(e.what()).find("kernel.height") != std::string::npos;
        std::printf("invalid problem: [%s] %s\n", fftconv::to_string(e.code()), e.what());
        if (e.code() != fftconv::status::invalid_argument || !named) {
            std::printf("FAIL: expected invalid_argument naming kernel.height\n");
            ++failures;
        }
    }

    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("no CUDA device: the GPU part is skipped\n");
        return failures ? 1 : 0;
    }
    float *x = nullptr, *w = nullptr, *y = nullptr;
    const bool allocated =
        cudaMalloc(reinterpret_cast<void**>(&x), sizeof(float) * p.input_elements()) == cudaSuccess &&
        cudaMalloc(reinterpret_cast<void**>(&w), sizeof(float) * p.filter_elements()) == cudaSuccess &&
        cudaMalloc(reinterpret_cast<void**>(&y), sizeof(float) * p.output_elements()) == cudaSuccess &&
        cudaMemset(x, 0, sizeof(float) * p.input_elements()) == cudaSuccess &&
        cudaMemset(w, 0, sizeof(float) * p.filter_elements()) == cudaSuccess;
    if (!allocated) {
        std::printf("FAIL: cudaMalloc/cudaMemset\n");
        return 1;
    }
    try {
        fftconv::context ctx;
        ctx.conv2d(p, x, w, y);
        if (cudaDeviceSynchronize() != cudaSuccess) ++failures;
        std::printf("conv2d on the GPU: %s\n", failures ? "FAILED" : "ok");
    } catch (const fftconv::error& e) {
        std::printf("FAIL: conv2d: %s\n", e.what());
        ++failures;
    }
    cudaFree(x);
    cudaFree(w);
    cudaFree(y);
    return failures ? 1 : 0;
}
