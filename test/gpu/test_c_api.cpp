// The C ABI: status codes, per-thread messages, and a correct result.
#include "doctest.hpp"

#include <string>
#include <vector>

#include "fftconv/fftconv.h"
#include "reference.hpp"

TEST_CASE("the C ABI computes conv2d and reports errors with codes and messages") {
    fftconv_context ctx = nullptr;
    REQUIRE(fftconv_create(&ctx, nullptr) == FFTCONV_SUCCESS);
    CHECK(std::string(fftconv_last_error()).empty());

    const fftconv_problem p{2, 12, 7, 70, 61, 9};
    const fftconv::problem cxx{p.batch, p.in_channels, p.out_channels, p.height, p.width, p.kernel_extent};
    auto x = fftconv::reference::make_device_array<float>(cxx.input_elements());
    auto w = fftconv::reference::make_device_array<float>(cxx.filter_elements());
    auto y = fftconv::reference::make_device_array<float>(cxx.output_elements());
    auto exact = fftconv::reference::make_device_array<double>(cxx.output_elements());
    fftconv::reference::fill_normal(x.data(), x.size, 11, nullptr);
    fftconv::reference::fill_normal(w.data(), w.size, 12, nullptr);
    fftconv::reference::fill_nan(y.data(), y.size, nullptr);

    size_t bytes = 0;
    CHECK(fftconv_workspace_size(ctx, &p, &bytes) == FFTCONV_SUCCESS);
    CHECK(bytes > 0);
    CHECK(fftconv_reserve(ctx, &p) == FFTCONV_SUCCESS);
    REQUIRE(fftconv_conv2d(ctx, &p, x.data(), w.data(), y.data()) == FFTCONV_SUCCESS);
    fftconv::reference::direct_conv_gpu(cxx, x.data(), w.data(), exact.data(), nullptr);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const auto a = fftconv::reference::compare(fftconv::reference::to_host(y.data(), y.size),
                                               fftconv::reference::to_host(exact.data(), exact.size));
    CHECK(a.passes());

    fftconv_problem bad = p;
    bad.kernel_extent = 62;
    CHECK(fftconv_conv2d(ctx, &bad, x.data(), w.data(), y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("problem.kernel_extent = 62 exceeds problem.width = 61") !=
          std::string::npos);
    CHECK(fftconv_conv2d(ctx, nullptr, x.data(), w.data(), y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("problem is a null pointer") != std::string::npos);
    CHECK(fftconv_conv2d(nullptr, &p, x.data(), w.data(), y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(fftconv_workspace_size(ctx, &p, nullptr) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_status_string(FFTCONV_OUT_OF_MEMORY)) == "out_of_memory");

    // A workspace limit below the smallest pass: out of memory, named; above
    // it, passes; release() hands everything back and the context still works.
    CHECK(fftconv_set_workspace_limit(ctx, 4096) == FFTCONV_SUCCESS);
    CHECK(fftconv_conv2d(ctx, &p, x.data(), w.data(), y.data()) == FFTCONV_OUT_OF_MEMORY);
    CHECK(std::string(fftconv_last_error()).find("bytes are usable") != std::string::npos);
    CHECK(fftconv_set_workspace_limit(ctx, bytes / 3) == FFTCONV_SUCCESS);
    size_t limited = 0;
    CHECK(fftconv_workspace_size(ctx, &p, &limited) == FFTCONV_SUCCESS);
    CHECK(limited <= bytes / 3);
    CHECK(fftconv_release(ctx) == FFTCONV_SUCCESS);
    fftconv::reference::fill_nan(y.data(), y.size, nullptr);
    REQUIRE(fftconv_conv2d(ctx, &p, x.data(), w.data(), y.data()) == FFTCONV_SUCCESS);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(fftconv::reference::compare(fftconv::reference::to_host(y.data(), y.size),
                                      fftconv::reference::to_host(exact.data(), exact.size))
              .passes());
    CHECK(fftconv_set_workspace_limit(nullptr, 1) == FFTCONV_INVALID_ARGUMENT);
    CHECK(fftconv_release(nullptr) == FFTCONV_INVALID_ARGUMENT);
    // Host memory is refused by name before anything runs.
    std::vector<float> host(size_t(cxx.input_elements()));
    CHECK(fftconv_conv2d(ctx, &p, host.data(), w.data(), y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("x = ") != std::string::npos);

    // A successful call clears the message.
    CHECK(fftconv_conv2d(ctx, &p, x.data(), w.data(), y.data()) == FFTCONV_SUCCESS);
    CHECK(std::string(fftconv_last_error()).empty());
    CHECK(fftconv_destroy(ctx) == FFTCONV_SUCCESS);
    CHECK(fftconv_destroy(nullptr) == FFTCONV_SUCCESS);
}
