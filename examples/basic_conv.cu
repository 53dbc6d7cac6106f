// examples/basic_conv.cu — the five-minute tour: one conv2d on the GPU,
// checked against the float64 oracle. Exits 77 where there is no GPU.
#include <cstdio>

#include <fftconv/fftconv.hpp>

#include "reference.hpp"

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::puts("no CUDA device: nothing to run");
        return 77;
    }
    try {
        const fftconv::problem p{.batch = 2, .in_channels = 64, .out_channels = 32,
                                 .height = 200, .width = 150, .kernel = 12};
        fftconv::context ctx;  // current device, default stream
        auto x = fftconv::reference::make_device_array<float>(p.input_elements());
        auto w = fftconv::reference::make_device_array<float>(p.filter_elements());
        auto y = fftconv::reference::make_device_array<float>(p.output_elements());
        fftconv::reference::fill_normal(x.data(), x.size, 1, ctx.stream());
        fftconv::reference::fill_normal(w.data(), w.size, 2, ctx.stream());

        ctx.conv2d(p, x.data(), w.data(), y.data());  // enqueued; nothing synchronizes

        auto exact = fftconv::reference::make_device_array<double>(p.output_elements());
        fftconv::reference::direct_conv_gpu(p, x.data(), w.data(), exact.data(), ctx.stream());
        const auto a = fftconv::reference::compare(fftconv::reference::to_host(y.data(), y.size),
                                                   fftconv::reference::to_host(exact.data(), exact.size));
        const auto d = ctx.plan(p);
        std::printf("%s\n  path %s, tile %d, workspace %.1f MiB\n  relative L2 error %.3g, worst element %.3f of tolerance: %s\n",
                    fftconv::to_string(p).c_str(), fftconv::to_string(d.path),
                    d.geometry.tile_extent(), double(ctx.workspace_size(p)) / (1 << 20), a.relative_l2,
                    a.worst_fraction, a.passes() ? "pass" : "FAIL");
        return a.passes() ? 0 : 1;
    } catch (const fftconv::error& e) {
        std::fprintf(stderr, "fftconv error (%s): %s\n", fftconv::to_string(e.code()), e.what());
        return 1;
    }
}
