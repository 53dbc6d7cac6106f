// The pair balancing of the fused transforms (pair_scale.cuh), run on the
// CPU: balancing_scale's factors for every pair of binary exponents a float
// can have (subnormal, zero, infinite and NaN partners included), checked
// for what the kernels rely on; pair_lanes against a brute-force count of
// each warp's lanes of a pair, for every pair width the kernels use.
#include "doctest.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fftconv/detail/kernels/pair_scale.cuh"

namespace {

using namespace fftconv::detail;

// Whether f is 2^k for an integer k (a normal float with a zero mantissa).
bool is_power_of_two_float(float f) {
    const unsigned bits = std::bit_cast<unsigned>(f);
    return f > 0.0f && std::isnormal(f) && (bits & 0x7fffffu) == 0u;
}

// The binary exponent e of a positive finite x: x in [2^(e-1), 2^e).
int binary_exponent(double x) {
    int e = 0;
    (void)std::frexp(x, &e);
    return e;
}

// Largest magnitudes to pair: zero, the smallest subnormal, a mid subnormal,
// 1.5 * 2^e for every normal exponent, the largest float, infinity, NaN.
std::vector<float> magnitudes() {
    std::vector<float> m{0.0f, std::bit_cast<float>(1u), std::bit_cast<float>(0x00400000u)};
    for (int e = -125; e <= 128; ++e) m.push_back(std::ldexp(0.75f, e));
    m.push_back(std::bit_cast<float>(0x7f7fffffu));
    m.push_back(INFINITY);
    m.push_back(NAN);
    return m;
}

}  // namespace

TEST_CASE("balancing_scale: exact inverse powers of two that bring the smaller partner to the larger's exponent") {
    const std::vector<float> all = magnitudes();
    int checked = 0;
    for (const float a : all)
        for (const float b : all) {
            const pair_scale s = balancing_scale(std::bit_cast<unsigned>(a), std::bit_cast<unsigned>(b));
            CAPTURE(a);
            CAPTURE(b);
            const float in[2] = {s.in.x, s.in.y}, out[2] = {s.out.x, s.out.y}, largest[2] = {a, b};
            bool any_factor = false;
            for (int p = 0; p < 2; ++p) {
                // Exact powers of two, each the other's inverse: the way back
                // restores every value bit for bit (none of the scaled values
                // leaves the normal range, below).
                REQUIRE(is_power_of_two_float(in[p]));
                REQUIRE(is_power_of_two_float(out[p]));
                CHECK(double(in[p]) * double(out[p]) == 1.0);
                const bool has = std::isfinite(largest[p]) && largest[p] != 0.0f;
                if (!has) CHECK(in[p] == 1.0f);  // zero or non-finite: left alone
                any_factor = any_factor || in[p] != 1.0f;
            }
            CHECK(s.active == any_factor);

            const bool has_a = std::isfinite(a) && a != 0.0f, has_b = std::isfinite(b) && b != 0.0f;
            if (!has_a && !has_b) continue;
            const double larger = std::max(has_a ? double(a) : 0.0, has_b ? double(b) : 0.0);
            const int target = std::abs(binary_exponent(larger)) > 64 ? 0 : binary_exponent(larger);
            for (int p = 0; p < 2; ++p) {
                if (!(std::isfinite(largest[p]) && largest[p] != 0.0f)) continue;
                const double scaled = double(largest[p]) * double(in[p]);
                // Both partners at one exponent: the shared transform rounds
                // each as if alone. Where the factor would pass 2^+-126 (a
                // partner over 2^126 from the target) it stops there, as
                // close as it may; a subnormal counts as exponent -126, so
                // it rises, to the target at most.
                const int exponent = binary_exponent(scaled), original = binary_exponent(largest[p]);
                const bool clamped = std::abs(std::log2(double(in[p]))) == 126;
                if (!std::isnormal(largest[p])) {
                    CHECK(exponent <= target);
                    CHECK(exponent > original);
                } else if (!clamped) {
                    CHECK(exponent == target);
                } else {
                    CHECK(std::abs(exponent - target) == std::abs(original - target) - 126);
                }
                // Nothing near overflow inside the transform: T^2 = 2^12 times
                // the largest scaled value stays far below FLT_MAX.
                CHECK(scaled < std::ldexp(1.0, 65));
            }
            ++checked;
        }
    CHECK(checked > 60000);
}

TEST_CASE("pair_lanes: each warp's lanes of a thread's pair, for every pair width the kernels use") {
    auto check = [](auto pair_threads_constant, int block_threads) {
        constexpr int pair_threads = decltype(pair_threads_constant)::value;
        for (int linear = 0; linear < block_threads; ++linear) {
            const int warp = linear / 32;
            unsigned expected = 0;
            for (int lane = 0; lane < 32; ++lane)
                if ((warp * 32 + lane) / pair_threads == linear / pair_threads) expected |= 1u << lane;
            CAPTURE(pair_threads);
            CAPTURE(linear);
            CHECK(pair_lanes<pair_threads>(linear) == expected);
        }
    };
    check(std::integral_constant<int, 16>{}, 512);   // T = 16: two pairs a warp
    check(std::integral_constant<int, 32>{}, 512);
    check(std::integral_constant<int, 48>{}, 384);   // a pair across warps, starting mid-warp
    check(std::integral_constant<int, 64>{}, 512);
    check(std::integral_constant<int, 96>{}, 384);
    check(std::integral_constant<int, 288>{}, 288);  // T = 96, three threads a line
}
