// src/direct/plane_extents.hpp — a depthwise problem's extents as the direct
// kernels read them (src/direct/direct_depthwise.cu, src/direct/narrow_depthwise.cu):
// narrowed to int once, after a kernel's fit check has bounded them.
#pragma once

#include <cstdint>

#include "fftconv/problem.hpp"

namespace fftconv::detail {

struct plane_extents {
    std::int64_t planes;  // batch x out_channels: one output plane each
    std::int64_t batch, in_channels, out_channels, multiplier;
    int height, width, out_height, out_width, kernel_height, kernel_width, pad_top, pad_left;
};

// `p`'s extents; for a problem a direct kernel fits (its extents within int).
inline plane_extents plane_extents_of(const problem& p) {
    return {p.batch * p.out_channels,      p.batch,
            p.in_channels,                 p.out_channels,
            p.out_channels / p.in_channels, int(p.height),
            int(p.width),                  int(p.out_height()),
            int(p.out_width()),            int(p.kernel.height),
            int(p.kernel.width),           int(p.padding.height),
            int(p.padding.width)};
}

}  // namespace fftconv::detail
