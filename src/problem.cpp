// src/problem.cpp — validation of a conv2d problem.
#include <string>

#include "fftconv/detail/check.hpp"
#include "fftconv/problem.hpp"

namespace fftconv {
namespace {

void require_extent(const char* field, std::int64_t value) {
    if (value < 1)
        detail::throw_invalid(std::string("fftconv: problem.") + field + " = " +
                              std::to_string(value) + " must be at least 1");
    if (value > max_extent)
        detail::throw_invalid(std::string("fftconv: problem.") + field + " = " +
                              std::to_string(value) + " exceeds the largest supported extent " +
                              std::to_string(max_extent));
}

// The product of `factors` (all in 1..max_extent), or 0 past max_tensor_elements.
std::int64_t bounded_product(std::initializer_list<std::int64_t> factors) {
    std::int64_t product = 1;
    for (std::int64_t f : factors) {
        if (product > max_tensor_elements / f) return 0;
        product *= f;
    }
    return product;
}

void require_elements(const char* tensor, std::initializer_list<std::int64_t> factors,
                      const std::string& shape) {
    if (bounded_product(factors) == 0)
        detail::throw_invalid(std::string("fftconv: ") + tensor + " " + shape +
                              " has more than 2^40 elements, the largest tensor supported");
}

}  // namespace

void validate(const problem& p) {
    require_extent("batch", p.batch);
    require_extent("in_channels", p.in_channels);
    require_extent("out_channels", p.out_channels);
    require_extent("height", p.height);
    require_extent("width", p.width);
    require_extent("kernel_extent", p.kernel_extent);
    if (p.kernel_extent > p.height)
        detail::throw_invalid("fftconv: problem.kernel_extent = " + std::to_string(p.kernel_extent) +
                              " exceeds problem.height = " + std::to_string(p.height) +
                              " (a valid convolution needs kernel_extent <= height)");
    if (p.kernel_extent > p.width)
        detail::throw_invalid("fftconv: problem.kernel_extent = " + std::to_string(p.kernel_extent) +
                              " exceeds problem.width = " + std::to_string(p.width) +
                              " (a valid convolution needs kernel_extent <= width)");
    auto dims = [](std::initializer_list<std::int64_t> d) {
        std::string s = "[";
        for (std::int64_t v : d) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
        return s + "]";
    };
    require_elements("input x", {p.batch, p.in_channels, p.height, p.width},
                     dims({p.batch, p.in_channels, p.height, p.width}));
    require_elements("filter w", {p.out_channels, p.in_channels, p.kernel_extent, p.kernel_extent},
                     dims({p.out_channels, p.in_channels, p.kernel_extent, p.kernel_extent}));
    require_elements("output y", {p.batch, p.out_channels, p.out_height(), p.out_width()},
                     dims({p.batch, p.out_channels, p.out_height(), p.out_width()}));
}

std::string to_string(const problem& p) {
    return "batch=" + std::to_string(p.batch) + " in_channels=" + std::to_string(p.in_channels) +
           " out_channels=" + std::to_string(p.out_channels) + " height=" + std::to_string(p.height) +
           " width=" + std::to_string(p.width) + " kernel_extent=" + std::to_string(p.kernel_extent);
}

}  // namespace fftconv
