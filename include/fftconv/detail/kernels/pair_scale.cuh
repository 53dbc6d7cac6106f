// fftconv/detail/kernels/pair_scale.cuh — two real slices in one complex
// transform, each rounded as if it were alone.
//
// The fused transforms carry two real tiles a, b as z = a + i b. The shared
// transform rounds both to the larger one's magnitude, so a tile beside one a
// million times larger would keep a millionth of its precision. Where the
// partners are slices a user treats as independent (two filters, two samples
// of a depthwise pair or of a filter gradient's positions), each is brought
// to the larger one's binary exponent by an exact power of two before the
// transform and taken back after it (pair_scale); the factors come from the
// partners' largest magnitudes, gathered over the pair's threads
// (pair_largest).
//
// balancing_scale and pair_lanes are host-and-device: the host tests check
// them against brute force on the CPU.
#pragma once

#include <bit>

#include <cuda_runtime.h>

namespace fftconv::detail {

// The factors that make a pair's partners independent of each other's
// magnitude: multiply the loaded (real, imaginary) partners by `in`, and what
// the transform makes of each by `out` (exact powers of two, out = 1 / in).
// `active`: some factor is not 1 (where none is, the multiplies are skipped).
struct pair_scale {
    float2 in{1.0f, 1.0f}, out{1.0f, 1.0f};
    bool active = false;
};

// 2^e as a float, e in [-126, 127].
__host__ __device__ __forceinline__ float power_of_two(int e) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(unsigned(127 + e) << 23);
#else
    return std::bit_cast<float>(unsigned(127 + e) << 23);
#endif
}

// The scale of a pair whose partners' largest magnitudes have the float bits
// a and b: the smaller partner is brought up to the larger one's binary
// exponent, so that the shared transform rounds each as if it were alone;
// where the larger one's exponent is beyond +-64, both are brought to ~1
// instead, so that no finite tile overflows (or sinks into subnormals)
// inside the transform. A zero or non-finite partner keeps factor 1;
// factors stay within 2^+-126.
__host__ __device__ __forceinline__ pair_scale balancing_scale(unsigned a, unsigned b) {
    auto exponent = [](unsigned bits) {  // largest in [2^(e-1), 2^e); subnormals -126; 0: none
        return bits == 0u || bits >= 0x7f800000u ? 0 : int(bits >> 23) - 126;
    };
    const bool has_a = a != 0u && a < 0x7f800000u, has_b = b != 0u && b < 0x7f800000u;
    const int ea = exponent(a), eb = exponent(b);
    const int larger = has_a && has_b ? max(ea, eb) : has_a ? ea : eb;
    const int target = larger > 64 || larger < -64 ? 0 : larger;
    pair_scale s;
    const int ka = has_a ? min(max(target - ea, -126), 126) : 0, kb = has_b ? min(max(target - eb, -126), 126) : 0;
    s.in = float2{power_of_two(ka), power_of_two(kb)};
    s.out = float2{power_of_two(-ka), power_of_two(-kb)};
    s.active = ka != 0 || kb != 0;
    return s;
}

// The lanes of this warp below this one.
__device__ __forceinline__ unsigned lanes_below() {
    unsigned mask;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(mask));
    return mask;
}

// The lanes of thread `linear`'s warp that work on its pair (pair p is
// threads [p * PairThreads, (p + 1) * PairThreads) of the block).
template <int PairThreads>
__host__ __device__ __forceinline__ unsigned pair_lanes(int linear) {
    const int pair = linear / PairThreads, warp = linear / 32;
    const int lo = max(pair * PairThreads, warp * 32) - warp * 32;
    const int hi = min((pair + 1) * PairThreads, warp * 32 + 32) - warp * 32;
    return (hi - lo == 32 ? 0xffffffffu : (1u << (hi - lo)) - 1u) << lo;
}

// The partners' largest magnitudes, gathered over the threads of each pair
// of a block: pair p is threads [p * PairThreads, (p + 1) * PairThreads) of
// the block's linear order. Each warp's first lane of a pair writes that
// pair's maxima over the warp into the warp's own slot (a warp holds parts of
// two pairs at most), so nothing needs zeroing and no atomics; after a
// barrier, a pair's threads read the slots of its warps. Non-negative floats
// order as their bits do.
template <int Threads, int PairThreads>
struct pair_largest {
    static_assert(Threads % 32 == 0 && PairThreads >= 16, "whole warps, at most two pairs a warp");
    uint2 slot[Threads / 32][2];

    // Every lane of the pair in this warp calls it, thread `linear` of the
    // block (largest.x: the real partner's, .y: the imaginary one's).
    __device__ void add(int linear, float2 largest) {
        const int pair = linear / PairThreads, warp = linear / 32;
        const unsigned same = pair_lanes<PairThreads>(linear);
        const unsigned a = __reduce_max_sync(same, __float_as_uint(largest.x));
        const unsigned b = __reduce_max_sync(same, __float_as_uint(largest.y));
        if ((same & lanes_below()) == 0u) slot[warp][pair - warp * 32 / PairThreads] = uint2{a, b};
    }
    // Pair `pair`'s largest magnitudes (float bits) and scale, once its
    // threads have added (a barrier between).
    __device__ uint2 bits(int pair) const {
        uint2 m{0u, 0u};
        const int first = pair * PairThreads / 32, last = ((pair + 1) * PairThreads - 1) / 32;
        for (int w = first; w <= last; ++w) {
            const uint2 v = slot[w][pair - w * 32 / PairThreads];
            m = uint2{max(m.x, v.x), max(m.y, v.y)};
        }
        return m;
    }
    __device__ pair_scale scale(int pair) const {
        const uint2 m = bits(pair);
        return balancing_scale(m.x, m.y);
    }
};

__device__ __forceinline__ float2 scaled(float2 v, float2 factor) { return float2{v.x * factor.x, v.y * factor.y}; }

}  // namespace fftconv::detail
