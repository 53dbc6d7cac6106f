// src/api/context.cu — the context's entry points. Each call finds its route
// (dispatch/compiled_table.hpp): a specialization runs its own instantiation of the
// pipeline; the generic path runs the one instantiated here, with runtime
// geometry.
#include <optional>
#include <string>

#include "direct/direct_depthwise.hpp"
#include "dispatch/compiled_table.hpp"
#include "fftconv/context.hpp"
#include "fftconv/detail/pipeline/pipeline.cuh"
#include "fftconv/detail/runtime/pointer_check.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"

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
void context::set_workspace_allocator(const workspace_allocator& allocator) { engine_->set_allocator(allocator); }

namespace {

detail::route route_of(const detail::engine& e, const problem& p) {
    return detail::find_route(e.registered, p, e.forced_tile_extent);
}

// Runs the call on its route: the direct kernel (unless given a filter
// spectrum), the specialization's pipeline, or the generic one.
void run(detail::engine& e, const detail::route& r, const problem& p, const float* x,
         const detail::filter_input& filter, const float* bias, float* y) {
    if (r.decision.path == path_kind::direct && filter.w != nullptr) detail::direct_depthwise(e, p, x, filter.w, bias, y);
    else if (r.entry != nullptr) r.entry->run(e, p, x, filter, bias, y);
    else detail::run_pipeline(e, p, r.decision.geometry, x, filter, bias, y);
}

}  // namespace

dispatch_decision context::plan(const problem& p) const { return route_of(*engine_, p).decision; }

void context::add_specialization(const specialization& s) {
    if (s.run == nullptr || s.transform_filter == nullptr || s.kernels == nullptr)
        detail::throw_invalid("fftconv: add_specialization: make the specialization with fftconv::specialize<Cfg>()");
    engine_->registered.push_back(s);
}

std::size_t context::workspace_size(const problem& p) const {
    engine_->begin_call();
    const int tile_extent = route_of(*engine_, p).decision.geometry.tile_extent();
    return detail::plan_passes(*engine_, p, tile_extent, true).workspace;
}

void context::reserve(const problem& p) {
    engine_->begin_call();
    (void)detail::prepare(*engine_, p, route_of(*engine_, p).decision.geometry.tile_extent(), true);
}

void context::conv2d(const problem& p, const float* x, const float* w, const float* bias, float* y) {
    require_pointer(w, "w");
    detail::check_operands(*engine_, p, x, w, bias, y);
    run(*engine_, route_of(*engine_, p), p, x, detail::filter_input{w, {}}, bias, y);
}

filter_spectrum context::transform_filter(const problem& p, const float* w) {
    require_pointer(w, "w");
    engine_->begin_call();
    validate(p);
    detail::require_device_memory(w, sizeof(float) * std::size_t(p.filter_elements()), engine_->device(), "w");
    const detail::route r = route_of(*engine_, p);
    filter_spectrum made(r.decision.geometry, p.groups, engine_->device());
    void* spectrum = made.data_.get();
    if (r.entry != nullptr) r.entry->transform_filter(*engine_, p, w, spectrum);
    else detail::transform_filter_spectrum(*engine_, p, r.decision.geometry, w, spectrum);
    return made;
}

void context::conv2d(const problem& p, const float* x, const filter_spectrum& w, const float* bias, float* y) {
    require_pointer(w.data(), "the filter spectrum (moved from?)");
    detail::check_operands(*engine_, p, x, nullptr, bias, y);
    if (w.device() != engine_->device())
        detail::throw_invalid("fftconv: the filter spectrum is on CUDA device " + std::to_string(w.device()) +
                              ", but this context runs on device " + std::to_string(engine_->device()) +
                              ": transform the filter with a context of this device");
    const tile_geometry<>& made_for = w.geometry();
    const detail::route route = route_of(*engine_, p);
    const tile_geometry<> runs_with = route.decision.geometry;
    if (made_for != runs_with || w.groups() != p.groups)
        detail::throw_invalid(
            "fftconv: the filter spectrum was made for in_channels=" + std::to_string(made_for.in_channels()) +
            " out_channels=" + std::to_string(made_for.out_channels()) + " groups=" + std::to_string(w.groups()) +
            " kernel=" + std::to_string(made_for.kernel_height()) + "x" + std::to_string(made_for.kernel_width()) +
            " tile_extent=" + std::to_string(made_for.tile_extent()) + ", but problem " + to_string(p) +
            " runs with tile_extent=" + std::to_string(runs_with.tile_extent()));
    const detail::workspace_layout t = detail::make_layout(p, runs_with.tile_extent());
    const detail::filter_operand given{w.data(), 0, p.out_channels, t.filter_bin_stride};
    run(*engine_, route, p, x, detail::filter_input{nullptr, given}, bias, y);
}

filter_spectrum::filter_spectrum(const tile_geometry<>& geometry, std::int64_t groups, int device)
    : geometry_(geometry), groups_(groups), device_(device),
      data_(detail::allocate_device(bytes(), "a filter spectrum")) {}

std::size_t filter_spectrum::bytes() const noexcept {
    // One (in_channels / groups) x out_channels matrix per bin.
    const std::int64_t matrix = geometry_.in_channels() / groups_ * geometry_.out_channels();
    return geometry_.complex_bytes() * std::size_t(geometry_.freq_bins()) *
           std::size_t(detail::bin_stride(matrix, geometry_));
}

}  // namespace fftconv
