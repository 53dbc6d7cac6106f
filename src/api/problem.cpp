// src/api/problem.cpp — validation of a conv2d problem.
#include <string>
#include <utility>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/problem.hpp"

namespace fftconv {
namespace {

std::string field(const char* name, std::int64_t value) {
    return std::string("problem.") + name + " = " + std::to_string(value);
}

void require_range(const char* name, std::int64_t value, std::int64_t lowest) {
    if (value < lowest)
        detail::throw_invalid("fftconv: " + field(name, value) + " must be at least " + std::to_string(lowest));
    if (value > max_extent)
        detail::throw_invalid("fftconv: " + field(name, value) + " exceeds the largest supported extent " +
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

std::string dims(std::initializer_list<std::int64_t> d) {
    std::string s = "[";
    for (std::int64_t v : d) s += (s.size() > 1 ? ", " : "") + std::to_string(v);
    return s + "]";
}

void require_elements(const char* tensor, std::initializer_list<std::int64_t> factors) {
    if (bounded_product(factors) == 0)
        detail::throw_invalid(std::string("fftconv: ") + tensor + " " + dims(factors) +
                              " has more than 2^40 elements, the largest tensor supported");
}

// The kernel must fit the padded image along one axis.
void require_kernel_fits(const char* kernel_name, std::int64_t kernel, const char* extent_name,
                         std::int64_t extent, const char* pad_name, std::int64_t pad) {
    if (kernel > extent + 2 * pad)
        detail::throw_invalid("fftconv: " + field(kernel_name, kernel) + " exceeds the padded " + extent_name +
                              " " + std::to_string(extent + 2 * pad) + " (" + extent_name + " " +
                              std::to_string(extent) + " + 2 * " + pad_name + " " + std::to_string(pad) +
                              "): the output would be empty");
}

}  // namespace

void validate(const problem& p) {
    if (p.stride != 1)
        detail::throw_invalid("fftconv: " + field("stride", p.stride) +
                              " is not supported: fftconv computes stride-1 convolutions only");
    if (p.dilation != 1)
        detail::throw_invalid("fftconv: " + field("dilation", p.dilation) +
                              " is not supported: fftconv computes undilated convolutions only");
    require_range("batch", p.batch, 1);
    require_range("in_channels", p.in_channels, 1);
    require_range("out_channels", p.out_channels, 1);
    require_range("height", p.height, 1);
    require_range("width", p.width, 1);
    require_range("kernel.height", p.kernel.height, 1);
    require_range("kernel.width", p.kernel.width, 1);
    require_range("padding.height", p.padding.height, 0);
    require_range("padding.width", p.padding.width, 0);
    require_range("groups", p.groups, 1);
    if (p.in_channels % p.groups != 0 || p.out_channels % p.groups != 0)
        detail::throw_invalid("fftconv: " + field("groups", p.groups) + " must divide problem.in_channels = " +
                              std::to_string(p.in_channels) + " and problem.out_channels = " +
                              std::to_string(p.out_channels));
    // A pad at least as large as the kernel only adds outputs that see zeros
    // alone; PyTorch allows it, and so do we, within the extent bound.
    if (p.padded_height() > max_extent || p.padded_width() > max_extent)
        detail::throw_invalid("fftconv: the padded image " + std::to_string(p.padded_height()) + " x " +
                              std::to_string(p.padded_width()) + " (height, width + 2 * padding) exceeds " +
                              "the largest supported extent " + std::to_string(max_extent));
    for (const auto& [name, extent] : {std::pair{"kernel.height", p.kernel.height}, std::pair{"kernel.width", p.kernel.width}})
        if (extent > max_kernel_extent)
            detail::throw_invalid("fftconv: " + field(name, extent) + " exceeds " + std::to_string(max_kernel_extent) +
                                  ", the largest kernel extent fftconv runs (a tile holds the kernel both ways)");
    require_kernel_fits("kernel.height", p.kernel.height, "height", p.height, "padding.height", p.padding.height);
    require_kernel_fits("kernel.width", p.kernel.width, "width", p.width, "padding.width", p.padding.width);
    require_elements("input x", {p.batch, p.in_channels, p.height, p.width});
    require_elements("filter w", {p.out_channels, p.group_in_channels(), p.kernel.height, p.kernel.width});
    require_elements("output y", {p.batch, p.out_channels, p.out_height(), p.out_width()});
}

std::string to_string(const problem& p) {
    std::string s = "batch=" + std::to_string(p.batch) + " in_channels=" + std::to_string(p.in_channels) +
                    " out_channels=" + std::to_string(p.out_channels) + " height=" + std::to_string(p.height) +
                    " width=" + std::to_string(p.width) + " kernel=" + std::to_string(p.kernel.height) + "x" +
                    std::to_string(p.kernel.width);
    if (p.padding != extent2d{0})
        s += " padding=" + std::to_string(p.padding.height) + "x" + std::to_string(p.padding.width);
    if (p.groups != 1) s += " groups=" + std::to_string(p.groups);
    if (p.stride != 1) s += " stride=" + std::to_string(p.stride);
    if (p.dilation != 1) s += " dilation=" + std::to_string(p.dilation);
    return s;
}

}  // namespace fftconv
