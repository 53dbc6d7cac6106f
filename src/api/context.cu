// src/api/context.cu — the context's forward entry points: each checks its
// operands, asks the router for the call's route (dispatch/router.hpp) and
// runs it (dispatch/forward.hpp). The gradients: backward.cpp.
#include <optional>
#include <string>

#include "dispatch/forward.hpp"
#include "dispatch/router.hpp"
#include "fftconv/context.hpp"
#include "fftconv/detail/pipeline/spectral_product.hpp"
#include "fftconv/detail/runtime/call_graphs.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/runtime/pointer_check.hpp"
#include "fftconv/detail/tiling/workspace_layout.hpp"

#define FFTCONV_STRINGIFY_(...) #__VA_ARGS__  // __CUDA_ARCH_LIST__ holds commas (800,900)
#define FFTCONV_STRINGIFY(x) FFTCONV_STRINGIFY_(x)

namespace fftconv {
namespace {

// Runs a checked forward call: through `graphs` where a graph is worth it
// (call_graphs.hpp) — not the direct path's one launch, nor a call so long
// that its launches hide behind the device's work — else directly.
void run_call(detail::engine& e, detail::call_graphs& graphs, const problem& p, const detail::route& r,
              const detail::activations& io, const detail::filter_input& filter, const float* bias) {
    const auto enqueue = [&] { detail::run_forward(e, r, p, io, filter, bias); };
    if ((r.decision.path == path_kind::direct && filter.w != nullptr) ||
        r.modelled_seconds > detail::call_graphs::longest_replayed_seconds)
        return enqueue();
    const detail::call_key key{.p = p,
                               .element_type = int(io.type),
                               .x = io.in,
                               .y = io.out,
                               .w = filter.w,
                               .spectrum = filter.given.data,
                               .bias = bias,
                               .route_entry = r.entry,
                               .route_path = int(r.decision.path),
                               .tile_extent = r.decision.geometry.tile_extent(),
                               .workspace_limit = e.workspace_limit};
    graphs.run(e, key, enqueue);
}

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

context::context(cudaStream_t stream)
    : engine_(std::make_unique<detail::engine>(stream)),
      router_(std::make_unique<detail::router>()),
      graphs_(std::make_unique<detail::call_graphs>()) {
    require_kernel_image(engine_->device());
}
context::~context() = default;
context::context(context&&) noexcept = default;
context& context::operator=(context&&) noexcept = default;

cudaStream_t context::stream() const noexcept { return engine_->stream(); }
void context::set_stream(cudaStream_t stream) { engine_->set_stream(stream); }

void context::force_tile_extent(int t) { router_->force_tile_extent(t); }

void context::set_workspace_limit(std::size_t bytes) { engine_->workspace_limit = bytes; }
std::size_t context::workspace_limit() const noexcept { return engine_->workspace_limit; }

void context::release() {
    graphs_->clear();
    engine_->release();
}
void context::replay_repeated_calls(bool enabled) { graphs_->set_enabled(enabled); }
void context::set_workspace_allocator(const workspace_allocator& allocator) {
    graphs_->clear();
    engine_->set_allocator(allocator);
}

dispatch_decision context::plan(const problem& p) const { return router_->forward(p).decision; }

void context::add_specialization(const specialization& s) { router_->add(s); }

std::size_t context::workspace_size(const problem& p) const {
    engine_->begin_call();
    return detail::forward_workspace(*engine_, router_->forward(p), p,
                                     detail::filter_calls::given_or_spectrum);
}

void context::reserve(const problem& p) {
    engine_->begin_call();
    detail::reserve_forward(*engine_, router_->forward(p), p, detail::filter_calls::given_or_spectrum);
}

void context::conv2d(const problem& p, detail::activations io, const float* w, const float* bias) {
    require_pointer(w, "w");
    detail::check_operands(*engine_, p, io, w, bias);
    run_call(*engine_, *graphs_, p, router_->forward(p), io, detail::filter_input{w, {}}, bias);
}

filter_spectrum context::transform_filter(const problem& p, const float* w) {
    require_pointer(w, "w");
    engine_->begin_call();
    if (engine_->capturing())
        detail::throw_invalid(
            "fftconv: transform_filter allocates the filter spectrum it returns, which cannot happen while the "
            "stream is being captured into a CUDA graph: make the spectrum before capturing, then capture the "
            "conv2d calls that use it");
    validate(p);
    detail::require_device_memory(w, sizeof(float) * std::size_t(p.filter_elements()), sizeof(float),
                                  engine_->device(), "w");
    const detail::route r = router_->forward(p);
    filter_spectrum made(r.decision.geometry, p.groups, engine_->device());
    detail::transform_filter_on(*engine_, r, p, w, made.data_.get());
    return made;
}

void context::conv2d(const problem& p, detail::activations io, const filter_spectrum& w, const float* bias) {
    require_pointer(w.data(), "the filter spectrum (moved from?)");
    detail::check_operands(*engine_, p, io, nullptr, bias);
    if (w.device() != engine_->device())
        detail::throw_invalid("fftconv: the filter spectrum is on CUDA device " + std::to_string(w.device()) +
                              ", but this context runs on device " + std::to_string(engine_->device()) +
                              ": transform the filter with a context of this device");
    const tile_geometry<>& made_for = w.geometry();
    const detail::route route = router_->forward(p);
    const tile_geometry<> runs_with = route.decision.geometry;
    if (made_for != runs_with || w.groups() != p.groups)
        detail::throw_invalid(
            "fftconv: the filter spectrum was made for in_channels=" + std::to_string(made_for.in_channels()) +
            " out_channels=" + std::to_string(made_for.out_channels()) + " groups=" + std::to_string(w.groups()) +
            " kernel=" + std::to_string(made_for.kernel_height()) + "x" + std::to_string(made_for.kernel_width()) +
            " tile_extent=" + std::to_string(made_for.tile_extent()) + ", but problem " + to_string(p) +
            " runs with tile_extent=" + std::to_string(runs_with.tile_extent()));
    const std::int64_t bin_stride = detail::bin_stride(p.group_in_channels() * p.out_channels, runs_with);
    const detail::filter_operand given{w.data(), 0, p.out_channels, bin_stride};
    run_call(*engine_, *graphs_, p, route, io, detail::filter_input{nullptr, given}, bias);
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
