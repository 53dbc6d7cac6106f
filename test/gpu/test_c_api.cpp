// The C ABI: status codes, per-thread messages, and a correct result.
#include "doctest.hpp"

#include <cstring>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "fftconv/fftconv.h"
#include "reference.hpp"

TEST_CASE("the C ABI computes conv2d and reports errors with codes and messages") {
    fftconv_context ctx = nullptr;
    REQUIRE(fftconv_create(&ctx, nullptr) == FFTCONV_SUCCESS);
    CHECK(std::string(fftconv_last_error()).empty());

    // A kernel wider than the direct kernels take: the FFT pipeline, whose
    // workspace the limits below act on.
    const fftconv_problem p{2, 12, 7, 70, 61, 33};
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
    CHECK(std::string(fftconv_last_error()).find("problem.kernel.width = 62 exceeds the padded width 61") !=
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
    // One call into a NaN-poisoned y, against the oracle.
    const auto call_passes = [&] {
        fftconv::reference::fill_nan(y.data(), y.size, nullptr);
        REQUIRE(fftconv_conv2d(ctx, &p, x.data(), w.data(), y.data()) == FFTCONV_SUCCESS);
        REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        CHECK(fftconv::reference::compare(fftconv::reference::to_host(y.data(), y.size),
                                          fftconv::reference::to_host(exact.data(), exact.size))
                  .passes());
    };
    call_passes();
    CHECK(fftconv_set_workspace_limit(nullptr, 1) == FFTCONV_INVALID_ARGUMENT);
    CHECK(fftconv_release(nullptr) == FFTCONV_INVALID_ARGUMENT);
    // Host memory is refused by name before anything runs.
    std::vector<float> host(size_t(cxx.input_elements()));
    CHECK(fftconv_conv2d(ctx, &p, host.data(), w.data(), y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("x = ") != std::string::npos);

    // A successful call clears the message.
    CHECK(fftconv_conv2d(ctx, &p, x.data(), w.data(), y.data()) == FFTCONV_SUCCESS);
    CHECK(std::string(fftconv_last_error()).empty());

    // The same call repeated: replayed as the context's own graph from the
    // third call on, and right every time; with replay off as well.
    for (int call = 0; call < 5; ++call) {
        CAPTURE(call);
        if (call == 4) CHECK(fftconv_set_replay(ctx, 0) == FFTCONV_SUCCESS);
        call_passes();
    }
    CHECK(fftconv_set_replay(nullptr, 1) == FFTCONV_INVALID_ARGUMENT);
    CHECK(fftconv_destroy(ctx) == FFTCONV_SUCCESS);
    CHECK(fftconv_destroy(nullptr) == FFTCONV_SUCCESS);
}

TEST_CASE("fftconv_conv2d_ex: the whole operator, and a size-tagged description") {
    fftconv_context ctx = nullptr;
    REQUIRE(fftconv_create(&ctx, nullptr) == FFTCONV_SUCCESS);
    fftconv_conv2d_desc d = FFTCONV_CONV2D_DESC_INIT;
    CHECK(d.struct_size == sizeof(fftconv_conv2d_desc));
    CHECK((d.groups == 1 && d.stride == 1 && d.dilation == 1 && d.pad_height == 0));
    d.batch = 2;
    d.in_channels = 6;
    d.out_channels = 12;
    d.groups = 3;
    d.height = 33;
    d.width = 40;
    d.kernel_height = 7;
    d.kernel_width = 3;
    d.pad_height = 3;
    d.pad_width = 1;
    fftconv::problem cxx{.batch = 2, .in_channels = 6, .out_channels = 12, .height = 33, .width = 40,
                         .kernel = {7, 3}, .padding = {3, 1}, .groups = 3};
    auto x = fftconv::reference::make_device_array<float>(cxx.input_elements());
    auto w = fftconv::reference::make_device_array<float>(cxx.filter_elements());
    auto bias = fftconv::reference::make_device_array<float>(cxx.out_channels);
    auto y = fftconv::reference::make_device_array<float>(cxx.output_elements());
    auto exact = fftconv::reference::make_device_array<double>(cxx.output_elements());
    fftconv::reference::fill_normal(x.data(), x.size, 21, nullptr);
    fftconv::reference::fill_normal(w.data(), w.size, 22, nullptr);
    fftconv::reference::fill_normal(bias.data(), bias.size, 23, nullptr);
    fftconv::reference::fill_nan(y.data(), y.size, nullptr);

    size_t bytes = 0;
    CHECK(fftconv_workspace_size_ex(ctx, &d, &bytes) == FFTCONV_SUCCESS);
    CHECK(fftconv_reserve_ex(ctx, &d) == FFTCONV_SUCCESS);
    REQUIRE(fftconv_conv2d_ex(ctx, &d, x.data(), w.data(), bias.data(), y.data()) == FFTCONV_SUCCESS);
    fftconv::reference::direct_conv_gpu(cxx, x.data(), w.data(), exact.data(), nullptr, bias.data());
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(fftconv::reference::compare(fftconv::reference::to_host(y.data(), y.size),
                                      fftconv::reference::to_host(exact.data(), exact.size))
              .passes());

    // A description from a newer header (longer than this build's) is
    // refused without reading past this build's struct, whatever its tail
    // holds; so is an uninitialised struct_size.
    struct newer_desc {
        fftconv_conv2d_desc known;
        std::int64_t future_field;
    } newer{d, 0};
    newer.known.struct_size = sizeof(newer_desc);
    CHECK(fftconv_conv2d_ex(ctx, &newer.known, x.data(), w.data(), nullptr, y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("larger than this build's fftconv_conv2d_desc") != std::string::npos);
    fftconv_conv2d_desc garbage = d;
    garbage.struct_size = std::size_t{1} << 40;
    CHECK(fftconv_conv2d_ex(ctx, &garbage, x.data(), w.data(), nullptr, y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("larger than this build's fftconv_conv2d_desc") != std::string::npos);
    fftconv_conv2d_desc truncated = d;
    truncated.struct_size = 16;
    CHECK(fftconv_conv2d_ex(ctx, &truncated, x.data(), w.data(), nullptr, y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("struct_size = 16") != std::string::npos);
    fftconv_conv2d_desc strided = d;
    strided.stride = 2;
    CHECK(fftconv_conv2d_ex(ctx, &strided, x.data(), w.data(), nullptr, y.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("problem.stride = 2 is not supported") != std::string::npos);
    CHECK(fftconv_destroy(ctx) == FFTCONV_SUCCESS);
}

namespace {

// Depthwise 9 x 9 'same' on B2 C8 21 x 18: its C description and its problem.
struct depthwise_same {
    fftconv_conv2d_desc desc = FFTCONV_CONV2D_DESC_INIT;
    fftconv::problem problem{.batch = 2, .in_channels = 8, .out_channels = 8, .height = 21, .width = 18,
                             .kernel = 9, .padding = 4, .groups = 8};
    depthwise_same() {
        desc.batch = 2;
        desc.in_channels = desc.out_channels = desc.groups = 8;
        desc.height = 21;
        desc.width = 18;
        desc.kernel_height = desc.kernel_width = 9;
        desc.pad_height = desc.pad_width = 4;
    }
};

}  // namespace

TEST_CASE("the gradients through the C ABI") {
    fftconv_context ctx = nullptr;
    REQUIRE(fftconv_create(&ctx, nullptr) == FFTCONV_SUCCESS);
    const depthwise_same shape;
    const fftconv_conv2d_desc d = shape.desc;
    const fftconv::problem& cxx = shape.problem;
    using namespace fftconv::reference;
    auto x = make_device_array<float>(cxx.input_elements());
    auto w = make_device_array<float>(cxx.filter_elements());
    auto dy = make_device_array<float>(cxx.output_elements());
    auto dx = make_device_array<float>(cxx.input_elements());
    auto dw = make_device_array<float>(cxx.filter_elements());
    auto db = make_device_array<float>(cxx.out_channels);
    fill_normal(x.data(), x.size, 31, nullptr);
    fill_normal(w.data(), w.size, 32, nullptr);
    fill_normal(dy.data(), dy.size, 33, nullptr);
    CHECK(fftconv_reserve_backward_ex(ctx, &d) == FFTCONV_SUCCESS);
    REQUIRE(fftconv_conv2d_backward_data_ex(ctx, &d, dy.data(), w.data(), dx.data()) == FFTCONV_SUCCESS);
    REQUIRE(fftconv_conv2d_backward_filter_ex(ctx, &d, x.data(), dy.data(), dw.data(), db.data()) ==
            FFTCONV_SUCCESS);
    auto exact_dx = make_device_array<double>(cxx.input_elements());
    auto exact_dw = make_device_array<double>(cxx.filter_elements());
    auto exact_db = make_device_array<double>(cxx.out_channels);
    data_gradient_gpu(cxx, dy.data(), w.data(), exact_dx.data(), nullptr);
    filter_gradient_gpu(cxx, x.data(), dy.data(), exact_dw.data(), exact_db.data(), nullptr);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(compare(to_host(dx.data(), dx.size), to_host(exact_dx.data(), exact_dx.size)).passes());
    const accuracy filter = compare(to_host(dw.data(), dw.size), to_host(exact_dw.data(), exact_dw.size));
    CHECK(filter.relative_l2 <= 1e-6);
    CHECK(filter.worst_fraction <= 1.0);
    CHECK(compare(to_host(db.data(), db.size), to_host(exact_db.data(), exact_db.size)).worst_fraction <= 1.0);
    CHECK(fftconv_conv2d_backward_data_ex(ctx, &d, nullptr, w.data(), dx.data()) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("dy is a null pointer") != std::string::npos);
    CHECK(fftconv_destroy(ctx) == FFTCONV_SUCCESS);
}

namespace {

// Half values of `values` (rounded to nearest), and those halves widened back.
template <class Half>
std::vector<Half> rounded(const std::vector<float>& values) {
    std::vector<Half> out;
    for (const float v : values) out.push_back(Half(v));
    return out;
}
template <class Half>
std::vector<float> widened(const std::vector<Half>& values) {
    std::vector<float> out;
    for (const Half v : values) out.push_back(float(v));
    return out;
}

template <class T>
void upload(fftconv::reference::device_array<T>& to, const std::vector<T>& from) {
    REQUIRE(cudaMemcpy(to.data(), from.data(), sizeof(T) * from.size(), cudaMemcpyHostToDevice) == cudaSuccess);
}
template <class T>
std::vector<T> download(const fftconv::reference::device_array<T>& from) {
    std::vector<T> to(std::size_t(from.size));
    REQUIRE(cudaMemcpy(to.data(), from.data(), sizeof(T) * to.size(), cudaMemcpyDeviceToHost) == cudaSuccess);
    return to;
}

// Every element of the typed result is the float result on the widened
// inputs, rounded once to nearest (what the C ABI's typed calls promise).
template <class Half>
void check_rounded_once(const std::vector<Half>& typed, const std::vector<float>& single) {
    REQUIRE(typed.size() == single.size());
    std::size_t differ = 0;
    for (std::size_t i = 0; i < typed.size(); ++i) {
        const Half expected(single[i]);
        if (std::memcmp(&expected, &typed[i], sizeof(Half)) != 0) ++differ;
    }
    CHECK(differ == 0);
}

// conv2d (bfloat16) and its data gradient (float16) through the typed calls.
template <class Half>
void check_typed_c_calls(fftconv_element_type type) {
    fftconv_context ctx = nullptr;
    REQUIRE(fftconv_create(&ctx, nullptr) == FFTCONV_SUCCESS);
    const depthwise_same shape;  // with a bias
    const fftconv_conv2d_desc d = shape.desc;
    const fftconv::problem& cxx = shape.problem;
    using namespace fftconv::reference;
    auto source = make_device_array<float>(cxx.input_elements());
    auto w = make_device_array<float>(cxx.filter_elements());
    auto bias = make_device_array<float>(cxx.out_channels);
    fill_normal(source.data(), source.size, 41, nullptr);
    fill_normal(w.data(), w.size, 42, nullptr);
    fill_normal(bias.data(), bias.size, 43, nullptr);
    const std::vector<Half> x_half = rounded<Half>(to_host(source.data(), source.size));
    auto x = make_device_array<Half>(cxx.input_elements());
    auto x_float = make_device_array<float>(cxx.input_elements());
    upload(x, x_half);
    upload(x_float, widened(x_half));

    auto y = make_device_array<Half>(cxx.output_elements());
    auto y_float = make_device_array<float>(cxx.output_elements());
    REQUIRE(fftconv_conv2d_typed(ctx, &d, type, x.data(), w.data(), bias.data(), y.data()) == FFTCONV_SUCCESS);
    REQUIRE(fftconv_conv2d_ex(ctx, &d, x_float.data(), w.data(), bias.data(), y_float.data()) == FFTCONV_SUCCESS);
    // x stands for dy (this problem's y has x's shape: 'same').
    auto dx = make_device_array<Half>(cxx.input_elements());
    auto dx_float = make_device_array<float>(cxx.input_elements());
    REQUIRE(fftconv_conv2d_backward_data_typed(ctx, &d, type, x.data(), w.data(), dx.data()) == FFTCONV_SUCCESS);
    REQUIRE(fftconv_conv2d_backward_data_ex(ctx, &d, x_float.data(), w.data(), dx_float.data()) == FFTCONV_SUCCESS);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    check_rounded_once(download(y), download(y_float));
    check_rounded_once(download(dx), download(dx_float));

    CHECK(fftconv_conv2d_typed(ctx, &d, fftconv_element_type(7), x.data(), w.data(), nullptr, y.data()) ==
          FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("element_type = 7 is none of") != std::string::npos);
    CHECK(fftconv_conv2d_typed(ctx, &d, type, x.data(), w.data(), nullptr, nullptr) == FFTCONV_INVALID_ARGUMENT);
    CHECK(std::string(fftconv_last_error()).find("y is a null pointer") != std::string::npos);
    CHECK(fftconv_destroy(ctx) == FFTCONV_SUCCESS);
}

}  // namespace

TEST_CASE("half-precision activations through the C ABI: the float result on the widened inputs, rounded once") {
    SUBCASE("bfloat16") { check_typed_c_calls<__nv_bfloat16>(FFTCONV_BFLOAT16); }
    SUBCASE("float16") { check_typed_c_calls<__half>(FFTCONV_FLOAT16); }
}
