// The main of every GPU test binary: exit 77 (Meson's SKIP) when no CUDA
// device is present, so CI machines without a GPU stay green.
#define DOCTEST_CONFIG_IMPLEMENT
#include "doctest.hpp"

#include <cstdio>

#include <cuda_runtime_api.h>

int main(int argc, char** argv) {
    int devices = 0;
    const cudaError_t code = cudaGetDeviceCount(&devices);
    if (code != cudaSuccess || devices == 0) {
        std::printf("no CUDA device (%s): skipping GPU tests\n",
                    code == cudaSuccess ? "0 devices" : cudaGetErrorString(code));
        return 77;
    }
    doctest::Context context(argc, argv);
    return context.run();
}
