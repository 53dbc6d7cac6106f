// Validation: every invalid problem names the field and its value.
#include "doctest.hpp"

#include <cstdint>
#include <string>

#include "fftconv/detail/runtime/pointer_check.hpp"
#include "fftconv/problem.hpp"
#include "fftconv/status.hpp"

using namespace fftconv;

namespace {

// The message validate(p) throws; fails the test if it throws nothing or
// another status.
std::string rejection(const problem& p) {
    try {
        validate(p);
    } catch (const error& e) {
        CHECK(e.code() == status::invalid_argument);
        return e.what();
    }
    FAIL("validate accepted " << to_string(p));
    return {};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("a valid problem passes and derives its output extents") {
    const problem p{2, 128, 64, 256, 200, 16};
    CHECK_NOTHROW(validate(p));
    CHECK(p.out_height() == 241);
    CHECK(p.out_width() == 185);
    CHECK(p.output_elements() == 2 * 64 * 241 * 185);
    CHECK(p.filter_elements() == 64 * 128 * 16 * 16);
    CHECK_NOTHROW(validate(problem{1, 1, 1, 1, 1, 1}));
    CHECK_NOTHROW(validate(problem{1, 3, 5, 9, 9, 9}));  // kernel = image: a 1 x 1 output
}

TEST_CASE("non-positive extents name their field and value") {
    CHECK(contains(rejection({0, 1, 1, 8, 8, 3}), "problem.batch = 0 must be at least 1"));
    CHECK(contains(rejection({1, -2, 1, 8, 8, 3}), "problem.in_channels = -2"));
    CHECK(contains(rejection({1, 1, 0, 8, 8, 3}), "problem.out_channels = 0"));
    CHECK(contains(rejection({1, 1, 1, 0, 8, 3}), "problem.height = 0"));
    CHECK(contains(rejection({1, 1, 1, 8, -1, 3}), "problem.width = -1"));
    CHECK(contains(rejection({1, 1, 1, 8, 8, 0}), "problem.kernel.height = 0"));
    CHECK(contains(rejection({1, 1, 1, 8, 8, {3, 0}}), "problem.kernel.width = 0"));
    CHECK(contains(rejection({1, 1, 1, 8, 8, 3, {-1, 0}}), "problem.padding.height = -1 must be at least 0"));
    CHECK(contains(rejection({1, 1, 1, 8, 8, 3, {0, -2}}), "problem.padding.width = -2"));
    CHECK(contains(rejection({1, 4, 4, 8, 8, 3, 0, 0}), "problem.groups = 0"));
}

TEST_CASE("a kernel larger than the padded image is rejected with the extents involved") {
    CHECK(contains(rejection({1, 1, 1, 8, 20, 9}),
                   "problem.kernel.height = 9 exceeds the padded height 8 (height 8 + 2 * padding.height 0)"));
    CHECK(contains(rejection({1, 1, 1, 20, 8, 9}),
                   "problem.kernel.width = 9 exceeds the padded width 8 (width 8 + 2 * padding.width 0)"));
    // Padding makes room: a 9 x 9 kernel on an 8 x 8 image with one zero on each side.
    CHECK_NOTHROW(validate(problem{1, 1, 1, 8, 8, 9, 1}));
    CHECK(contains(rejection({1, 1, 1, 8, 8, 11, 1}), "padded height 10"));
}

TEST_CASE("padding, rectangular kernels and groups derive PyTorch's output and filter shapes") {
    // torch: conv2d(x[2, 6, 10, 7], w[9, 3, 3, 5], padding=(1, 2), groups=2) -> [2, 9, 10, 7]
    const problem p{.batch = 2, .in_channels = 6, .out_channels = 9, .height = 10, .width = 7,
                    .kernel = {3, 5}, .padding = {1, 2}, .groups = 3};
    CHECK_NOTHROW(validate(p));
    CHECK(p.out_height() == 10);
    CHECK(p.out_width() == 7);
    CHECK(p.group_in_channels() == 2);
    CHECK(p.group_out_channels() == 3);
    CHECK(p.filter_elements() == 9 * 2 * 3 * 5);
    CHECK(p.output_elements() == 2 * 9 * 10 * 7);
    // One number is both extents (a square kernel; equal padding).
    const problem square{1, 1, 1, 20, 20, 7, 2};
    CHECK(square.kernel == extent2d{7, 7});
    CHECK(square.padding == extent2d{2, 2});
    CHECK(square.out_height() == 18);
    // 'same' for odd kernels keeps the size; depthwise: groups = channels.
    const problem depthwise{.batch = 8, .in_channels = 64, .out_channels = 128, .height = 56, .width = 56,
                            .kernel = 31, .padding = same_padding(31), .groups = 64};
    CHECK_NOTHROW(validate(depthwise));
    CHECK(depthwise.out_height() == 56);
    CHECK(depthwise.group_in_channels() == 1);
    CHECK(depthwise.filter_elements() == 128 * 31 * 31);
    CHECK(same_padding({51, 5}) == extent2d{25, 2});
    CHECK(problem{1, 1, 1, 9, 9, {1, 9}, same_padding({1, 9})}.out_width() == 9);
}

TEST_CASE("groups must divide both channel counts; stride and dilation other than 1 are refused by name") {
    CHECK(contains(rejection({1, 6, 4, 8, 8, 3, 0, 4}),
                   "problem.groups = 4 must divide problem.in_channels = 6 and problem.out_channels = 4"));
    CHECK(contains(rejection({1, 6, 9, 8, 8, 3, 0, 6}), "problem.groups = 6 must divide"));
    problem strided{1, 1, 1, 8, 8, 3};
    strided.stride = 2;
    CHECK(contains(rejection(strided), "problem.stride = 2 is not supported"));
    problem dilated{1, 1, 1, 8, 8, 3};
    dilated.dilation = 3;
    CHECK(contains(rejection(dilated), "problem.dilation = 3 is not supported"));
}

TEST_CASE("to_string names the operator's fields, the defaults left out") {
    CHECK(to_string(problem{2, 3, 4, 5, 6, 3}) ==
          "batch=2 in_channels=3 out_channels=4 height=5 width=6 kernel=3x3");
    CHECK(to_string(problem{2, 4, 4, 5, 6, {1, 3}, {0, 1}, 4}) ==
          "batch=2 in_channels=4 out_channels=4 height=5 width=6 kernel=1x3 padding=0x1 groups=4");
}

TEST_CASE("extents past 32 bits and tensors past 2^40 elements are rejected") {
    CHECK(contains(rejection({std::int64_t{1} << 31, 1, 1, 8, 8, 3}),
                   "problem.batch = 2147483648 exceeds the largest supported extent"));
    const std::string x = rejection({1 << 20, 1 << 10, 1, 1 << 10, 1 << 10, 1});
    CHECK(contains(x, "input x [1048576, 1024, 1024, 1024]"));
    CHECK(contains(x, "more than 2^40 elements"));
    const std::string w = rejection({1, 1 << 21, 1 << 20, 1, 1, 1});
    CHECK(contains(w, "filter w [1048576, 2097152, 1, 1]"));
    // A kernel past 2^16 (reachable with padding): its tile would overflow the tile arithmetic.
    problem wide{.batch = 1, .in_channels = 1, .out_channels = 1, .height = 1, .width = 1, .kernel = {1, 70000},
                 .padding = {0, 40000}};
    CHECK(contains(rejection(wide), "problem.kernel.width = 70000 exceeds 65536, the largest kernel extent"));
    wide.kernel = {1, 65536};
    CHECK_NOTHROW(validate(wide));
}

TEST_CASE("status names are stable") {
    CHECK(std::string(to_string(status::invalid_argument)) == "invalid_argument");
    CHECK(std::string(to_string(status::out_of_memory)) == "out_of_memory");
    CHECK(std::string(to_string(status::cufft_error)) == "cufft_error");
}

TEST_CASE("a pointer not aligned to its elements is refused by name before CUDA is asked") {
    // No GPU needed: the alignment is checked first. Fake addresses, never read.
    const auto* odd = reinterpret_cast<const void*>(std::uintptr_t{0x10002});
    try {
        detail::require_device_memory(odd, 64, sizeof(float), 0, "x");
        FAIL("a float pointer at an address 2 past a multiple of 4 was accepted");
    } catch (const error& e) {
        CHECK(e.code() == status::invalid_argument);
        CHECK(std::string(e.what()) == "fftconv: x = 0x10002 is not aligned to its elements' 4 bytes");
    }
}
