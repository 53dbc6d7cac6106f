// src/context.cu — the context's entry points. Every compiled configuration
// of dispatch_table.hpp is instantiated here, through with_geometry.
#include <optional>
#include <string>

#include "dispatch_table.hpp"
#include "fftconv/context.hpp"
#include "fftconv/detail/pipeline.cuh"

namespace fftconv {
namespace {

void require_pointer(const void* p, const char* name) {
    if (p == nullptr) detail::throw_invalid(std::string("fftconv: ") + name + " is a null pointer");
}

}  // namespace

context::context(cudaStream_t stream) : engine_(std::make_unique<detail::engine>(stream)) {}
context::~context() = default;
context::context(context&&) noexcept = default;
context& context::operator=(context&&) noexcept = default;

cudaStream_t context::stream() const noexcept { return engine_->stream(); }
void context::set_stream(cudaStream_t stream) { engine_->set_stream(stream); }

void context::force_tile_extent(int t) {
    if (t < 0)
        detail::throw_invalid("fftconv: force_tile_extent(" + std::to_string(t) +
                              "): the tile extent must be 0 (automatic) or positive");
    engine_->forced_tile_extent = t;
}

dispatch_decision context::plan(const problem& p) const {
    return choose_dispatch(p, engine_->forced_tile_extent);
}

std::size_t context::workspace_size(const problem& p) const {
    std::size_t bytes = 0;
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        bytes = detail::workspace_bytes(*engine_, p, detail::make_tiling(p, detail::shape_of(geo)));
    });
    return bytes;
}

void context::reserve(const problem& p) {
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        (void)detail::prepare(*engine_, p, detail::make_tiling(p, detail::shape_of(geo)));
    });
}

void context::conv2d(const problem& p, const float* x, const float* w, float* y) {
    require_pointer(x, "x");
    require_pointer(w, "w");
    require_pointer(y, "y");
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        detail::run_pipeline(*engine_, p, geo, x, w, nullptr, y);
    });
}

filter_spectrum context::transform_filter(const problem& p, const float* w) {
    require_pointer(w, "w");
    std::optional<filter_spectrum> made;  // its shape is known inside the dispatch
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        const detail::tiling t = detail::make_tiling(p, detail::shape_of(geo));
        made = filter_spectrum(p.in_channels, p.out_channels, t.shape);
        detail::transform_filters(*engine_, p, geo, detail::prepare(*engine_, p, t), w,
                                  static_cast<cufftComplex*>(made->data_.get()));
    });
    return std::move(*made);
}

void context::conv2d(const problem& p, const float* x, const filter_spectrum& w, float* y) {
    require_pointer(x, "x");
    require_pointer(w.data(), "the filter spectrum (moved from?)");
    require_pointer(y, "y");
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        const tile_shape s = detail::shape_of(geo);
        if (w.in_channels() != p.in_channels || w.out_channels() != p.out_channels ||
            w.shape().kernel_extent != s.kernel_extent || w.shape().tile_extent != s.tile_extent)
            detail::throw_invalid(
                "fftconv: the filter spectrum was made for in_channels=" +
                std::to_string(w.in_channels()) + " out_channels=" + std::to_string(w.out_channels()) +
                " kernel_extent=" + std::to_string(w.shape().kernel_extent) +
                " tile_extent=" + std::to_string(w.shape().tile_extent) + ", but problem " +
                to_string(p) + " runs with tile_extent=" + std::to_string(s.tile_extent));
        detail::run_pipeline(*engine_, p, geo, x, nullptr,
                             static_cast<const cufftComplex*>(w.data()), y);
    });
}

filter_spectrum::filter_spectrum(std::int64_t in_channels, std::int64_t out_channels, tile_shape shape)
    : in_channels_(in_channels), out_channels_(out_channels), shape_(shape),
      data_(detail::allocate_device(bytes(), "a filter spectrum")) {}

std::size_t filter_spectrum::bytes() const noexcept {
    return sizeof(cufftComplex) * std::size_t(shape_.freq_bins()) *
           std::size_t(detail::bin_stride(in_channels_ * out_channels_, shape_));
}

}  // namespace fftconv
