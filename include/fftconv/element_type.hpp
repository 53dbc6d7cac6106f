// fftconv/element_type.hpp — the element types of activations: x, y, dy, dx.
//
// fftconv computes in FP32 whatever its activations' type: bfloat16 and
// float16 inputs are widened as the kernels read them (exactly: every half
// value is a float), and outputs are rounded to nearest as they are written.
// A half-precision call therefore gives the FP32 result on its (already
// rounded) inputs, rounded once, and moves half the bytes of a float call.
// Filters, biases and filter gradients stay float32: they are small, and
// usually reused.
#pragma once

#include "fftconv/version.hpp"  // first: refuses a pre-C++20 compiler with a clear #error

#include <concepts>
#include <cstddef>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace fftconv {

enum class element_type { float32, bfloat16, float16 };

// The C++ types of the three: float, __nv_bfloat16, __half.
template <class E>
concept activation_element = std::same_as<E, float> || std::same_as<E, __nv_bfloat16> || std::same_as<E, __half>;

template <activation_element E>
inline constexpr element_type element_type_of = std::same_as<E, float>           ? element_type::float32
                                                : std::same_as<E, __nv_bfloat16> ? element_type::bfloat16
                                                                                 : element_type::float16;

constexpr std::size_t element_bytes(element_type type) { return type == element_type::float32 ? 4 : 2; }

// "float32", "bfloat16", "float16".
constexpr const char* to_string(element_type type) {
    return type == element_type::float32 ? "float32" : type == element_type::bfloat16 ? "bfloat16" : "float16";
}

namespace detail {

// An input and an output activation of one call, of one element type.
struct activations {
    const void* in;
    void* out;
    element_type type;
};

template <activation_element E>
activations activations_of(const E* in, E* out) {
    return {in, out, element_type_of<E>};
}

// f(element_tag<E>{}) for the C++ type E of `type`: where a runtime element
// type becomes a template argument.
template <class E>
struct element_tag {
    using type = E;
};
template <class F>
decltype(auto) with_element(element_type type, F&& f) {
    switch (type) {
        case element_type::bfloat16: return f(element_tag<__nv_bfloat16>{});
        case element_type::float16: return f(element_tag<__half>{});
        default: return f(element_tag<float>{});
    }
}

}  // namespace detail

}  // namespace fftconv
