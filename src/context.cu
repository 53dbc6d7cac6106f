// src/context.cu — the context's entry points. Every compiled configuration
// of dispatch_table.hpp is instantiated here, through with_geometry.
#include <optional>
#include <string>

#include "dispatch_table.hpp"
#include "fftconv/context.hpp"
#include "fftconv/detail/pipeline.cuh"
#include "fftconv/detail/pointer_check.hpp"

#define FFTCONV_STRINGIFY_(...) #__VA_ARGS__  // __CUDA_ARCH_LIST__ holds commas (800,900)
#define FFTCONV_STRINGIFY(x) FFTCONV_STRINGIFY_(x)

namespace fftconv {
namespace {

void require_pointer(const void* p, const char* name) {
    if (p == nullptr) detail::throw_invalid(std::string("fftconv: ") + name + " is a null pointer");
}

// A kernel of this library: asking for its attributes tells whether the
// build holds code the current device can run.
__global__ void probe_kernel() {}

// Refuses a device this build has no code for, naming what to rebuild with
// (every later launch would fail with "no kernel image").
void require_kernel_image(int device) {
    cudaFuncAttributes attributes{};
    const cudaError_t code = cudaFuncGetAttributes(&attributes, probe_kernel);
    if (code == cudaSuccess) return;
    (void)cudaGetLastError();
    int major = 0, minor = 0;
    FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    const std::string capability = std::to_string(major) + std::to_string(minor);
#ifdef __CUDA_ARCH_LIST__
    constexpr const char* built_for = FFTCONV_STRINGIFY(__CUDA_ARCH_LIST__);
#else
    constexpr const char* built_for = "unknown";
#endif
    throw error(status::cuda_error,
                "fftconv: CUDA device " + std::to_string(device) + " has compute capability " +
                    std::to_string(major) + "." + std::to_string(minor) +
                    ", which this build of fftconv has no code for (built for __CUDA_ARCH_LIST__ = " +
                    built_for + "): rebuild with meson option -Dgpu_arch=" + capability + " (" +
                    cudaGetErrorName(code) + ")");
}

}  // namespace

context::context(cudaStream_t stream) : engine_(std::make_unique<detail::engine>(stream)) {
    require_kernel_image(engine_->device());
}
context::~context() = default;
context::context(context&&) noexcept = default;
context& context::operator=(context&&) noexcept = default;

cudaStream_t context::stream() const noexcept { return engine_->stream(); }
void context::set_stream(cudaStream_t stream) { engine_->set_stream(stream); }

void context::force_tile_extent(int t) {
    if (t < 0 || t > detail::max_forced_tile_extent)
        detail::throw_invalid("fftconv: force_tile_extent(" + std::to_string(t) +
                              "): the tile extent must be 0 (automatic) or from 1 to " +
                              std::to_string(detail::max_forced_tile_extent));
    engine_->forced_tile_extent = t;
}

void context::set_workspace_limit(std::size_t bytes) { engine_->workspace_limit = bytes; }
std::size_t context::workspace_limit() const noexcept { return engine_->workspace_limit; }

void context::release() { engine_->release(); }

dispatch_decision context::plan(const problem& p) const {
    return choose_dispatch(p, engine_->forced_tile_extent);
}

std::size_t context::workspace_size(const problem& p) const {
    std::size_t bytes = 0;
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        bytes = detail::plan_passes(*engine_, p, detail::shape_of(geo), true).workspace;
    });
    return bytes;
}

void context::reserve(const problem& p) {
    engine_->begin_call();
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        (void)detail::prepare(*engine_, p, detail::shape_of(geo), true);
    });
}

void context::conv2d(const problem& p, const float* x, const float* w, float* y) {
    require_pointer(w, "w");
    detail::check_operands(*engine_, p, x, w, y);
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        detail::run_pipeline(*engine_, p, geo, x, detail::filter_input{w, {}}, y);
    });
}

filter_spectrum context::transform_filter(const problem& p, const float* w) {
    require_pointer(w, "w");
    engine_->begin_call();
    validate(p);
    detail::require_device_memory(w, sizeof(float) * std::size_t(p.filter_elements()), engine_->device(), "w");
    std::optional<filter_spectrum> made;  // its shape is known inside the dispatch
    detail::with_geometry(p, engine_->forced_tile_extent, [&](const auto& geo) {
        const tile_shape s = detail::shape_of(geo);
        // Only the filter: one image tile per pass is all the layout needs.
        problem filter_only = p;
        filter_only.batch = 1;
        filter_only.height = filter_only.width = p.kernel_extent;
        const detail::tiling t = detail::make_tiling(p, s);
        const detail::tiling layout = detail::make_tiling(filter_only, s);
        made = filter_spectrum(p.in_channels, p.out_channels, s);
        void* spectrum = made->data_.get();
        const detail::pipeline_buffers b =
            detail::carve(layout, engine_->workspace(detail::workspace_bytes(*engine_, filter_only, layout)));
        detail::transform_filters(*engine_, p, geo, t, b, w, spectrum, engine_->stream());
    });
    return std::move(*made);
}

void context::conv2d(const problem& p, const float* x, const filter_spectrum& w, float* y) {
    require_pointer(w.data(), "the filter spectrum (moved from?)");
    detail::check_operands(*engine_, p, x, nullptr, y);
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
        const detail::tiling t = detail::make_tiling(p, s);
        const detail::filter_operand given{w.data(), 0, p.out_channels, t.filter_bin_stride};
        detail::run_pipeline(*engine_, p, geo, x, detail::filter_input{nullptr, given}, y);
    });
}

filter_spectrum::filter_spectrum(std::int64_t in_channels, std::int64_t out_channels, tile_shape shape)
    : in_channels_(in_channels), out_channels_(out_channels), shape_(shape),
      data_(detail::allocate_device(bytes(), "a filter spectrum")) {}

std::size_t filter_spectrum::bytes() const noexcept {
    return detail::complex_bytes(shape_) * std::size_t(shape_.freq_bins()) *
           std::size_t(detail::bin_stride(in_channels_ * out_channels_, shape_));
}

}  // namespace fftconv
