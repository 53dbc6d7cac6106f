// src/tiling/workspace_layout.cpp — the cuFFT plans of a layout, and its workspace.
#include <algorithm>

#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"

namespace fftconv::detail {
namespace {

// Bin-major: complex_stride = transforms, complex_distance = 1.
fft_transform_key bin_major_key(fft_direction direction, const workspace_layout& t, std::int64_t transforms) {
    return {direction, t.geometry.double_intermediates(), t.geometry.tile_extent(), transforms, transforms, 1};
}

}  // namespace

fft_transform_key filter_transform_key(const workspace_layout& t) {
    return bin_major_key(fft_direction::forward, t, t.filter_transforms);
}
fft_transform_key input_transform_key(const workspace_layout& t) {
    return bin_major_key(fft_direction::forward, t, t.input_transforms);
}
fft_transform_key output_transform_key(const workspace_layout& t) {
    return bin_major_key(fft_direction::inverse, t, t.output_transforms);
}

std::size_t workspace_bytes(engine& e, const workspace_layout& t) {
    if (t.geometry.fused() || t.image_to_output) return t.fft_work_offset();  // no cuFFT
    // Each size is read before the next lookup, which may evict that cuFFT plan.
    const std::size_t input_work = e.transform_for(input_transform_key(t)).work_bytes;
    const std::size_t output_work = e.transform_for(output_transform_key(t)).work_bytes;
    std::size_t fft_work = std::max(input_work, output_work);
    if (t.holds_filter) fft_work = std::max(fft_work, e.transform_for(filter_transform_key(t)).work_bytes);
    return t.fft_work_offset() + align_up(fft_work);
}

pipeline_buffers buffers_in(const workspace_layout& t, void* workspace) {
    auto* base = static_cast<char*>(workspace);
    return pipeline_buffers{
        base + t.real_offset(),
        base + t.input_spectrum_offset(),
        t.holds_filter ? base + t.filter_spectrum_offset() : nullptr,
        base + t.output_spectrum_offset(),
        base + t.fft_work_offset(),
    };
}

}  // namespace fftconv::detail
