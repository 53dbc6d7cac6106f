// Validation: every invalid problem names the field and its value.
#include "doctest.hpp"

#include <string>

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
    CHECK(contains(rejection({1, 1, 1, 8, 8, 0}), "problem.kernel_extent = 0"));
}

TEST_CASE("a kernel larger than the image is rejected with both extents") {
    CHECK(contains(rejection({1, 1, 1, 8, 20, 9}), "problem.kernel_extent = 9 exceeds problem.height = 8"));
    CHECK(contains(rejection({1, 1, 1, 20, 8, 9}), "problem.kernel_extent = 9 exceeds problem.width = 8"));
}

TEST_CASE("extents past 32 bits and tensors past 2^40 elements are rejected") {
    CHECK(contains(rejection({std::int64_t{1} << 31, 1, 1, 8, 8, 3}),
                   "problem.batch = 2147483648 exceeds the largest supported extent"));
    const std::string x = rejection({1 << 20, 1 << 10, 1, 1 << 10, 1 << 10, 1});
    CHECK(contains(x, "input x [1048576, 1024, 1024, 1024]"));
    CHECK(contains(x, "more than 2^40 elements"));
    const std::string w = rejection({1, 1 << 21, 1 << 20, 1, 1, 1});
    CHECK(contains(w, "filter w [1048576, 2097152, 1, 1]"));
}

TEST_CASE("status names are stable") {
    CHECK(std::string(to_string(status::invalid_argument)) == "invalid_argument");
    CHECK(std::string(to_string(status::out_of_memory)) == "out_of_memory");
    CHECK(std::string(to_string(status::cufft_error)) == "cufft_error");
}
