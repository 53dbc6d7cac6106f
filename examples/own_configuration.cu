// examples/own_configuration.cu — specialise fftconv for your own shape at
// compile time and let a context's dispatch find it. Exits 77 without a GPU.
//
// A layer with 12 x 12 filters and 96 channels is not in the library's
// compiled table; instantiating {12, 96, 32} here makes its kernels see the
// kernel extent, the channels and the tile extent as constants.
#include <cstdio>

#include <fftconv/specialize.cuh>

#include "reference.hpp"

constexpr fftconv::tile_config my_layer{.kernel_extent = 12, .channels = 96, .tile_extent = 32};

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::puts("no CUDA device: nothing to run");
        return 77;
    }
    try {
        const fftconv::problem p{.batch = 4, .in_channels = 96, .out_channels = 96,
                                 .height = 100, .width = 100, .kernel = 12};
        fftconv::context ctx;
        std::printf("before: %s path\n", fftconv::to_string(ctx.plan(p).path));
        ctx.add_specialization(fftconv::specialize<my_layer>());
        const fftconv::dispatch_decision d = ctx.plan(p);
        std::printf("after:  %s path, tile %d (outputs per tile side %d)\n", fftconv::to_string(d.path),
                    d.geometry.tile_extent(), d.geometry.out_tile_height());

        auto x = fftconv::reference::make_device_array<float>(p.input_elements());
        auto w = fftconv::reference::make_device_array<float>(p.filter_elements());
        auto y = fftconv::reference::make_device_array<float>(p.output_elements());
        fftconv::reference::fill_normal(x.data(), x.size, 1, ctx.stream());
        fftconv::reference::fill_normal(w.data(), w.size, 2, ctx.stream());
        ctx.conv2d(p, x.data(), w.data(), y.data());  // runs my_layer's instantiation

        auto exact = fftconv::reference::make_device_array<double>(p.output_elements());
        fftconv::reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream());
        const auto a = fftconv::reference::compare(fftconv::reference::to_host(y.data(), y.size),
                                                   fftconv::reference::to_host(exact.data(), exact.size));
        std::printf("relative L2 error %.3g, worst element %.3f of tolerance: %s\n", a.relative_l2,
                    a.worst_fraction, a.passes() ? "pass" : "FAIL");
        return a.passes() && d.path == fftconv::path_kind::registered ? 0 : 1;
    } catch (const fftconv::error& e) {
        std::fprintf(stderr, "fftconv error (%s): %s\n", fftconv::to_string(e.code()), e.what());
        return 1;
    }
}
