// bench/main.cu — fftconv-bench: fftconv on a suite of shapes (--suite: the
// leaderboard, or depthwise 'same' convolutions with a bias) or your own
// (--shape), the whole operator (padding, groups, bias), verified against the
// float64 oracle and timed against cuDNN. Every shape that runs a compiled
// configuration (groups 1, a square kernel) is also timed on the generic
// path forced to the same tile extent (row "fftconv-generic", unless
// --no-generic): the same algorithm with runtime geometry, so the two rows
// measure what the compile-time specialisation gains. With --element bfloat16
// or float16 fftconv reads and writes half activations itself (row
// "fftconv"), and the same run times the float call between casts of x and
// y (row "fftconv (cast passes)": what a caller without half I/O runs).
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cufft.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "cudnn_peer.hpp"
#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/fftconv.hpp"
#include "half_io.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "report.hpp"
#include "suites.hpp"

#ifdef FFTCONV_HAVE_CUDNN
#include <cudnn.h>
#endif

using namespace fftconv;
using bench::options;

namespace {

std::string version_string(int v, int major_div, int minor_div) {
    return std::to_string(v / major_div) + "." + std::to_string((v % major_div) / minor_div);
}

bench::run_info describe(const options& o, int device, const bench::l2_flusher& flusher) {
    bench::run_info info;
    cudaDeviceProp prop{};
    FFTCONV_CUDA_TRY(cudaGetDeviceProperties(&prop, device));
    info.gpu = prop.name;
    int driver = 0, runtime = 0, cufft = 0;
    FFTCONV_CUDA_TRY(cudaDriverGetVersion(&driver));
    FFTCONV_CUDA_TRY(cudaRuntimeGetVersion(&runtime));
    info.driver = version_string(driver, 1000, 10);
    info.cuda_runtime = version_string(runtime, 1000, 10);
    FFTCONV_CUFFT_TRY(cufftGetVersion(&cufft));
    info.cufft = std::to_string(cufft);
    info.cublas = std::to_string(CUBLAS_VERSION);
#ifdef FFTCONV_HAVE_CUDNN
    info.cudnn = std::to_string(cudnnGetVersion());
#else
    info.cudnn = "not built";
#endif
    info.suite = o.suite;
    info.commit = o.commit;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    info.date = date;
    info.repetitions = o.repetitions;
    info.l2_flush = o.flush;
    info.reuse_filter = o.reuse_filter;
    info.replay = o.replay;
    info.l2_flush_bytes = flusher.bytes();
    info.element = o.element;
    return info;
}

std::size_t free_device_bytes() {
    std::size_t free = 0, total = 0;
    FFTCONV_CUDA_TRY(cudaMemGetInfo(&free, &total));
    return free;
}

// Device memory taken since `free_before` (0 where more is free now: the
// device is shared, and others may have freed some).
std::size_t taken_since(std::size_t free_before) {
    const std::size_t free_now = free_device_bytes();
    return free_before > free_now ? free_before - free_now : 0;
}

// The less accurate of two checks of one call's output.
reference::accuracy worse(const reference::accuracy& a, const reference::accuracy& b) {
    reference::accuracy w = a.worst_fraction >= b.worst_fraction ? a : b;
    w.relative_l2 = std::max(a.relative_l2, b.relative_l2);
    w.non_finite = std::max(a.non_finite, b.non_finite);
    return w;
}

// The row of the generic path forced to a compiled configuration's tile extent.
constexpr const char* generic_row = "fftconv-generic";
// The row of a half-precision run that casts x to float, runs the float
// call and casts y back (one elementwise kernel each, timed with the call).
constexpr const char* cast_row = "fftconv (cast passes)";

// One call's activations: x and y (dy and dx) of the run's element type; for
// float32 the float buffers themselves.
struct activation_io {
    element_type type;
    const void* x;
    void* y;
};

// ctx.conv2d with io's element type; W is a filter (const float*) or a filter_spectrum.
template <class W>
void conv2d_as(context& ctx, const problem& p, const activation_io& io, const W& w, const float* bias) {
    switch (io.type) {
        case element_type::float32:
            ctx.conv2d(p, static_cast<const float*>(io.x), w, bias, static_cast<float*>(io.y));
            break;
        case element_type::bfloat16:
            ctx.conv2d(p, static_cast<const __nv_bfloat16*>(io.x), w, bias, static_cast<__nv_bfloat16*>(io.y));
            break;
        case element_type::float16:
            ctx.conv2d(p, static_cast<const __half*>(io.x), w, bias, static_cast<__half*>(io.y));
            break;
    }
}

// ctx.conv2d_backward_data with io's element type (io.x: dy, io.y: dx).
void backward_data_as(context& ctx, const problem& p, const activation_io& io, const float* w) {
    switch (io.type) {
        case element_type::float32:
            ctx.conv2d_backward_data(p, static_cast<const float*>(io.x), w, static_cast<float*>(io.y));
            break;
        case element_type::bfloat16:
            ctx.conv2d_backward_data(p, static_cast<const __nv_bfloat16*>(io.x), w, static_cast<__nv_bfloat16*>(io.y));
            break;
        case element_type::float16:
            ctx.conv2d_backward_data(p, static_cast<const __half*>(io.x), w, static_cast<__half*>(io.y));
            break;
    }
}

// An output poisoned before the call we check: NaN (an unwritten element shows up as non-finite).
void poison_output(const activation_io& io, std::int64_t n, cudaStream_t stream) {
    if (io.type == element_type::float32) reference::fill_nan(static_cast<float*>(io.y), n, stream);
    else bench::poison(io.type, io.y, n, stream);
}

// fftconv on one shape in a fresh context (so its memory is this shape's
// alone), adding `bias` (null: none); forced_tile > 0 forces the generic path
// at that tile extent. The decision it ran under goes to *decision when that
// is non-null. With cast_passes (half activations only) the call is the row
// cast_row's: x widened into a float buffer, the float call, y rounded back
// (the two float buffers count in its peak memory).
bench::algorithm_result run_fftconv(const problem& p, int forced_tile, const activation_io& io, const float* w,
                                    const float* bias, const std::vector<double>& exact, const options& o,
                                    const bench::l2_flusher* flusher, cudaStream_t stream,
                                    dispatch_decision* decision = nullptr, bool cast_passes = false) {
    bench::algorithm_result r;
    r.name = cast_passes ? cast_row : "fftconv";
    r.element = io.type;
    const std::size_t free_before = free_device_bytes();
    context ctx(stream);
    ctx.force_tile_extent(forced_tile);
    ctx.replay_repeated_calls(o.replay);
    const dispatch_decision d = ctx.plan(p);
    if (decision != nullptr) *decision = d;
    r.detail = d.path == path_kind::direct && !o.reuse_filter
                   ? std::string("direct")
                   : std::string(to_string(d.path)) + " T=" + std::to_string(d.geometry.tile_extent());
    r.workspace_bytes = ctx.workspace_size(p);
    if (cast_passes) r.detail += " + 2 casts";

    poison_output(io, p.output_elements(), stream);
    std::function<void()> call;
    std::unique_ptr<filter_spectrum> spectrum;
    if (o.reuse_filter) spectrum = std::make_unique<filter_spectrum>(ctx.transform_filter(p, w));
    reference::device_array<float> x_float, y_float;  // cast_passes: the float call's x and y
    if (cast_passes) {
        x_float = reference::make_device_array<float>(p.input_elements());
        y_float = reference::make_device_array<float>(p.output_elements());
        call = [&] {
            bench::widen(io.type, io.x, x_float.data(), p.input_elements(), stream);
            if (spectrum) ctx.conv2d(p, x_float.data(), *spectrum, bias, y_float.data());
            else ctx.conv2d(p, x_float.data(), w, bias, y_float.data());
            bench::narrow(io.type, y_float.data(), io.y, p.output_elements(), stream);
        };
    } else if (spectrum) {
        call = [&] { conv2d_as(ctx, p, io, *spectrum, bias); };
    } else {
        call = [&] { conv2d_as(ctx, p, io, w, bias); };
    }
    const auto check = [&] {
        return bench::compare_output(bench::widened_to_host(io.type, io.y, p.output_elements()), exact, io.type);
    };
    call();  // warm-up, the context's first sighting of the call (eager): plans, workspace
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    const reference::accuracy eager = check();
    // With replay on, the second sighting captures the call into a CUDA
    // graph (context.hpp): made here, untimed, so that every timed call is
    // the steady state's replay, not one of them the capture.
    if (o.replay) {
        call();
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    }
    r.peak_bytes = taken_since(free_before);
    poison_output(io, p.output_elements(), stream);  // the timed calls' output is checked too
    r.time = bench::time_calls(o.repetitions, flusher, stream, call);
    r.accuracy = worse(eager, check());
    r.ran = true;
    return r;
}

// run() (a run_fftconv), or, when it throws, a row named `name` that did not
// run and says why: one shape's failure (the pipeline refuses it, runs out of
// memory) leaves the other shapes' figures. An error that leaves the device
// unusable ends the run at the next CUDA call, as before.
template <class Run>
bench::algorithm_result attempt(const std::string& name, const Run& run) {
    try {
        return run();
    } catch (const std::exception& e) {
        bench::progress("  " + name + " FAILED: " + e.what());
        bench::algorithm_result r;
        r.name = name;
        r.detail = std::string("FAILED: ") + e.what();
        return r;
    }
}

// The compiled configuration `p` runs at tile extent T: the first table entry
// that matches it (dispatch.hpp's rule: square kernel K, in = out channels,
// groups 1) with T.
const tile_config* compiled_entry(const problem& p, int tile_extent) {
    for (const tile_config& c : compiled_configs())
        if (matches(c, p) && c.tile_extent == tile_extent) return &c;
    return nullptr;
}

// One gradient of one shape (--suite backward): fftconv's in a fresh context
// and cuDNN's, each checked against the float64 definition of the gradient
// (reference::data_gradient_gpu / filter_gradient_gpu) and held to its
// pass's bar (report.hpp: 5e-7 relative L2 for the data gradient, 1e-6 for
// the filter gradient). A failing fftconv row clears *all_pass.
bench::shape_result run_gradient_shape(const bench::run_shape& s, const options& o, const bench::l2_flusher* flush,
                                       cudaStream_t stream, bool* all_pass) {
    const problem& p = s.shape;
    const bool data = s.pass == bench::pass::data_gradient;
    // --element applies to the data gradient's dy and dx; the filter
    // gradient's operands are float32 whatever the run's element.
    const element_type element = data ? o.element : element_type::float32;
    const bool half = element != element_type::float32;
    bench::shape_result sr{s.role, p, false, s.seed, {}, s.pass};
    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto dy = reference::make_device_array<float>(p.output_elements());
    reference::fill_normal(x.data(), x.size, s.seed, stream);
    reference::fill_normal(w.data(), w.size, s.seed ^ 0x5deece66dull, stream);
    reference::fill_normal(dy.data(), dy.size, s.seed ^ 0xd1ull, stream);
    const std::int64_t n = data ? p.input_elements() : p.filter_elements();
    auto out = reference::make_device_array<float>(n);
    // Half dy (dy itself then holds its widened values, for the oracle and
    // the cuDNN peers, which stay FP32 for the gradients) and dx.
    reference::device_array<char> dy_half, dx_half;
    activation_io io{element_type::float32, dy.data(), out.data()};
    if (half) {
        dy_half = bench::make_activations(element, dy.size);
        dx_half = bench::make_activations(element, n);
        bench::round_in_place(element, dy.data(), dy_half.data(), dy.size, stream);
        io = {element, dy_half.data(), dx_half.data()};
    }
    std::vector<double> exact;
    {
        auto exact_device = reference::make_device_array<double>(n);
        if (data) reference::data_gradient_gpu(p, dy.data(), w.data(), exact_device.data(), stream);
        else reference::filter_gradient_gpu(p, x.data(), dy.data(), exact_device.data(), nullptr, stream);
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
        exact = reference::to_host(exact_device.data(), exact_device.size);
    }
    bench::progress("  fftconv: " + std::to_string(o.repetitions) + " timed calls");
    // fftconv's gradient, or (cast_passes) the float data gradient between casts of dy and dx.
    const auto run = [&](bool cast_passes) {
        bench::algorithm_result r;
        r.name = cast_passes ? cast_row : "fftconv";
        r.detail = data ? "conv2d_backward_data" : "conv2d_backward_filter";
        if (cast_passes) r.detail += " + 2 casts";
        r.element = element;
        const std::size_t free_before = free_device_bytes();
        context ctx(stream);
        reference::device_array<float> dy_float, dx_float;
        if (cast_passes) {
            dy_float = reference::make_device_array<float>(dy.size);
            dx_float = reference::make_device_array<float>(n);
        }
        const auto call = [&] {
            if (cast_passes) {
                bench::widen(element, io.x, dy_float.data(), dy.size, stream);
                ctx.conv2d_backward_data(p, dy_float.data(), w.data(), dx_float.data());
                bench::narrow(element, dx_float.data(), io.y, n, stream);
            } else if (data) {
                backward_data_as(ctx, p, io, w.data());
            } else {
                ctx.conv2d_backward_filter(p, x.data(), dy.data(), out.data());
            }
        };
        const auto check = [&] {
            return bench::compare_output(bench::widened_to_host(element, io.y, n), exact, element);
        };
        poison_output(io, n, stream);
        call();  // warm-up: plans, workspace, scratch (gradients are never replayed as graphs)
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
        r.peak_bytes = taken_since(free_before);
        const reference::accuracy warm_up = check();
        poison_output(io, n, stream);  // the timed calls' output is checked too
        r.time = bench::time_calls(o.repetitions, flush, stream, call);
        r.accuracy = worse(warm_up, check());
        r.ran = true;
        return r;
    };
    sr.algorithms.push_back(attempt("fftconv", [&] { return run(false); }));
    if (half) {
        bench::progress(std::string("  ") + cast_row + ": " + std::to_string(o.repetitions) + " timed calls");
        sr.algorithms.push_back(attempt(cast_row, [&] { return run(true); }));
    }
    if (o.cudnn && bench::cudnn_available())
        for (auto& r : bench::run_cudnn_gradient_peers(p, s.pass, x.data(), w.data(), dy.data(), out.data(), exact,
                                                       o.repetitions, flush, stream))
            sr.algorithms.push_back(std::move(r));
    for (auto& a : sr.algorithms)  // fftconv's rows that did not run would have had the element
        if ((a.name == "fftconv" || a.name == cast_row) && !a.ran) a.element = element;
    for (const auto& a : sr.algorithms)
        if ((a.name == "fftconv" || a.name == cast_row) && !(a.ran && bench::passes(sr, a))) *all_pass = false;
    return sr;
}

std::string config_label(const tile_config& c) {
    std::ostringstream s;  // not "K" + std::to_string(...): GCC 12 warns falsely (-Wrestrict, PR 105329)
    s << "K" << c.kernel_extent << " C" << c.channels << " T" << c.tile_extent << (c.depthwise ? " dw" : "");
    return s.str();
}

}  // namespace

int main(int argc, char** argv) {
    const options o = bench::parse_options(argc, argv);
    // Every shape and the output path are checked before the GPU is touched.
    bench::check_before_running(o);
    int devices = 0;
    const cudaError_t probe = cudaGetDeviceCount(&devices);
    if (probe != cudaSuccess || devices == 0) {
        std::fprintf(stderr, "fftconv-bench: no CUDA GPU found (%s); the bench needs one.\n",
                     probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
        return 3;
    }
    try {
        int device = 0;
        FFTCONV_CUDA_TRY(cudaGetDevice(&device));
        cudaStream_t stream = nullptr;
        FFTCONV_CUDA_TRY(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
        const bench::l2_flusher flusher(device);
        const bench::l2_flusher* flush = o.flush ? &flusher : nullptr;
        const bench::run_info info = describe(o, device, flusher);

        std::vector<bench::shape_result> results;
        const std::vector<bench::run_shape> todo = bench::shapes_to_run(o);

        bool all_pass = true;
        std::vector<tile_config> compared;  // compiled configurations timed against the generic path
        for (std::size_t i = 0; i < todo.size(); ++i) {
            const problem& p = todo[i].shape;
            const std::uint64_t seed = todo[i].seed;
            validate(p);
            if (todo[i].pass != bench::pass::forward) {
                bench::progress("[" + std::to_string(i + 1) + "/" + std::to_string(todo.size()) + "] " +
                                to_string(p) + " " + to_string(todo[i].pass) + ": inputs and the float64 reference");
                results.push_back(run_gradient_shape(todo[i], o, flush, stream, &all_pass));
                continue;
            }
            bench::progress("[" + std::to_string(i + 1) + "/" + std::to_string(todo.size()) + "] " +
                            to_string(p) + (todo[i].bias ? " +bias" : "") + ": inputs and the float64 reference");
            bench::shape_result sr{todo[i].role, p, todo[i].bias, seed, {}};
            const element_type element = o.element;
            const bool half = element != element_type::float32;
            auto x = reference::make_device_array<float>(p.input_elements());
            auto w = reference::make_device_array<float>(p.filter_elements());
            reference::device_array<float> y;  // float32: fftconv's and the peers' output
            if (!half) y = reference::make_device_array<float>(p.output_elements());
            reference::fill_normal(x.data(), x.size, seed, stream);
            reference::fill_normal(w.data(), w.size, seed ^ 0x5deece66dull, stream);
            // The bias, when the shape has one: normal(0, 1), its own seed.
            reference::device_array<float> bias_memory;
            if (todo[i].bias) {
                bias_memory = reference::make_device_array<float>(p.out_channels);
                reference::fill_normal(bias_memory.data(), bias_memory.size, seed ^ 0xb1a5ull, stream);
            }
            const float* bias = todo[i].bias ? bias_memory.data() : nullptr;
            // Half activations: x rounded (x itself then holds the widened
            // values, which the oracle takes), y of the element type.
            reference::device_array<char> x_half, y_half;
            activation_io io{element, x.data(), y.data()};
            if (half) {
                x_half = bench::make_activations(element, x.size);
                y_half = bench::make_activations(element, p.output_elements());
                bench::round_in_place(element, x.data(), x_half.data(), x.size, stream);
                io = {element, x_half.data(), y_half.data()};
            }
            std::vector<double> exact;
            {
                auto exact_device = reference::make_device_array<double>(p.output_elements());
                reference::direct_conv_gpu(p, x.data(), w.data(), exact_device.data(), stream, bias);
                FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
                exact = reference::to_host(exact_device.data(), exact_device.size);
            }
            if (o.tile_sweep.empty()) {
                bench::progress("  fftconv: " + std::to_string(o.repetitions) + " timed calls");
                dispatch_decision d{};
                sr.algorithms.push_back(attempt("fftconv", [&] {
                    return run_fftconv(p, 0, io, w.data(), bias, exact, o, flush, stream, &d);
                }));
                if (half) {
                    bench::progress(std::string("  ") + cast_row + ": " + std::to_string(o.repetitions) +
                                    " timed calls");
                    sr.algorithms.push_back(attempt(cast_row, [&] {
                        return run_fftconv(p, 0, io, w.data(), bias, exact, o, flush, stream, nullptr, true);
                    }));
                }
                if (o.compare_generic && sr.algorithms.front().ran && d.path == path_kind::compiled) {
                    // Same inputs, same reference, same tile extent; runtime geometry.
                    const int t = d.geometry.tile_extent();
                    bench::progress("  fftconv, generic path forced to the compiled T=" + std::to_string(t) +
                                    ": " + std::to_string(o.repetitions) + " timed calls");
                    auto r = attempt(generic_row, [&] {
                        return run_fftconv(p, t, io, w.data(), bias, exact, o, flush, stream);
                    });
                    r.name = generic_row;
                    if (r.ran) r.detail += " (forced)";
                    sr.algorithms.push_back(std::move(r));
                    const tile_config* c = compiled_entry(p, t);
                    if (c != nullptr && std::find(compared.begin(), compared.end(), *c) == compared.end())
                        compared.push_back(*c);
                }
                if (o.cudnn) {
                    if (bench::cudnn_available() && !half) {
                        for (auto& r : bench::run_cudnn_peers(p, element, x.data(), w.data(), bias, y.data(), exact,
                                                              o.repetitions, flush, stream))
                            sr.algorithms.push_back(std::move(r));
                    } else if (bench::cudnn_available()) {
                        // cuDNN's convolutions take x, w and y of one type: the
                        // filter and bias rounded too, and their own oracle.
                        bench::progress("  cuDNN: " + std::string(to_string(element)) +
                                        " filter and bias, and their float64 reference");
                        auto w_widened = reference::make_device_array<float>(w.size);
                        FFTCONV_CUDA_TRY(cudaMemcpyAsync(w_widened.data(), w.data(), sizeof(float) * std::size_t(w.size),
                                                         cudaMemcpyDeviceToDevice, stream));
                        auto w_half = bench::make_activations(element, w.size);
                        bench::round_in_place(element, w_widened.data(), w_half.data(), w.size, stream);
                        reference::device_array<float> bias_widened;
                        reference::device_array<char> bias_half;
                        if (bias != nullptr) {
                            bias_widened = reference::make_device_array<float>(p.out_channels);
                            FFTCONV_CUDA_TRY(cudaMemcpyAsync(bias_widened.data(), bias,
                                                             sizeof(float) * std::size_t(p.out_channels),
                                                             cudaMemcpyDeviceToDevice, stream));
                            bias_half = bench::make_activations(element, p.out_channels);
                            bench::round_in_place(element, bias_widened.data(), bias_half.data(), p.out_channels,
                                                  stream);
                        }
                        std::vector<double> cudnn_exact;
                        {
                            auto exact_device = reference::make_device_array<double>(p.output_elements());
                            reference::direct_conv_gpu(p, x.data(), w_widened.data(), exact_device.data(), stream,
                                                       bias != nullptr ? bias_widened.data() : nullptr);
                            FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
                            cudnn_exact = reference::to_host(exact_device.data(), exact_device.size);
                        }
                        for (auto& r : bench::run_cudnn_peers(p, element, io.x, w_half.data(),
                                                              bias != nullptr ? bias_half.data() : nullptr, io.y,
                                                              cudnn_exact, o.repetitions, flush, stream))
                            sr.algorithms.push_back(std::move(r));
                    } else {
                        bench::algorithm_result none;
                        none.name = "cudnn";
                        none.detail = "not available: this bench was built without cuDNN";
                        sr.algorithms.push_back(none);
                    }
                }
            } else {
                for (int t : o.tile_sweep) {
                    // A T x T tile holds the kernel; 0 is the dispatch's own choice.
                    if (t != 0 && t < std::max(p.kernel.height, p.kernel.width)) continue;
                    bench::progress(t == 0 ? std::string("  fftconv, the dispatch's choice")
                                           : "  fftconv, tile extent " + std::to_string(t));
                    const std::string name = t == 0 ? std::string("fftconv") : "fftconv_T" + std::to_string(t);
                    auto r = attempt(name, [&] {
                        return run_fftconv(p, t, io, w.data(), bias, exact, o, flush, stream);
                    });
                    r.name = name;
                    sr.algorithms.push_back(std::move(r));
                }
            }
            for (auto& a : sr.algorithms)  // a row that did not run would have had the run's element
                if (!a.ran) a.element = element;
            for (const auto& a : sr.algorithms)  // an fftconv row fails by missing the bar or by not running
                if (a.name.rfind("fftconv", 0) == 0 && !(a.ran && bench::passes(sr, a))) all_pass = false;
            results.push_back(std::move(sr));
        }

        if (o.tile_sweep.empty() && o.compare_generic) {
            // Say which compiled configurations these shapes left without a comparison.
            std::string missed;
            for (const tile_config& c : compiled_configs())
                if (std::find(compared.begin(), compared.end(), c) == compared.end())
                    missed += (missed.empty() ? "" : ", ") + config_label(c);
            if (!missed.empty())
                bench::progress("compiled configurations no shape of this run used (no " +
                                std::string(generic_row) + " row for them): " + missed);
        }
        bench::progress("done; writing " + o.out_prefix + ".{json,md,svg}");
        bench::print_table(info, results);
        bench::write_json(o.out_prefix + ".json", info, results);
        bench::write_markdown(o.out_prefix + ".md", info, results);
        bench::write_svg(o.out_prefix + ".svg", info, results);
        std::printf("\nwrote %s.json, %s.md, %s.svg\n", o.out_prefix.c_str(), o.out_prefix.c_str(),
                    o.out_prefix.c_str());
        (void)cudaStreamDestroy(stream);
        if (!all_pass) {
            std::printf("\n*** ACCURACY CHECK FAILED: fftconv missed the bar or failed on at least one shape (see above) ***\n");
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fftconv-bench: %s\n", e.what());
        return 1;
    }
}
