// bench/main.cu — fftconv-bench: fftconv on a suite of shapes (--suite: the
// leaderboard, or depthwise 'same' convolutions with a bias) or your own
// (--shape), the whole operator (padding, groups, bias), verified against the
// float64 oracle and timed against cuDNN. Every shape that runs a compiled
// configuration (groups 1, a square kernel) is also timed on the generic
// path forced to the same tile extent (row "fftconv-generic", unless
// --no-generic): the same algorithm with runtime geometry, so the two rows
// measure what the compile-time specialisation gains.
#include <cublas_v2.h>
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
    info.l2_flush_bytes = flusher.bytes();
    return info;
}

std::size_t free_device_bytes() {
    std::size_t free = 0, total = 0;
    FFTCONV_CUDA_TRY(cudaMemGetInfo(&free, &total));
    return free;
}

// The row of the generic path forced to a compiled configuration's tile extent.
constexpr const char* generic_row = "fftconv-generic";

// fftconv on one shape in a fresh context (so its memory is this shape's
// alone), adding `bias` (null: none); forced_tile > 0 forces the generic path
// at that tile extent. The decision it ran under goes to *decision when that
// is non-null.
bench::algorithm_result run_fftconv(const problem& p, int forced_tile, const float* x, const float* w,
                                    const float* bias, float* y, const std::vector<double>& exact, const options& o,
                                    const bench::l2_flusher* flusher, cudaStream_t stream,
                                    dispatch_decision* decision = nullptr) {
    bench::algorithm_result r;
    r.name = "fftconv";
    const std::size_t free_before = free_device_bytes();
    context ctx(stream);
    ctx.force_tile_extent(forced_tile);
    const dispatch_decision d = ctx.plan(p);
    if (decision != nullptr) *decision = d;
    r.detail = d.path == path_kind::direct && !o.reuse_filter
                   ? std::string("direct")
                   : std::string(to_string(d.path)) + " T=" + std::to_string(d.geometry.tile_extent());
    r.workspace_bytes = ctx.workspace_size(p);

    reference::fill_nan(y, p.output_elements(), stream);
    std::function<void()> call;
    std::unique_ptr<filter_spectrum> spectrum;
    if (o.reuse_filter) {
        spectrum = std::make_unique<filter_spectrum>(ctx.transform_filter(p, w));
        call = [&] { ctx.conv2d(p, x, *spectrum, bias, y); };
    } else {
        call = [&] { ctx.conv2d(p, x, w, bias, y); };
    }
    call();  // warm-up: plans, workspace; and the output we check
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    r.peak_bytes = free_before - free_device_bytes();
    r.accuracy = reference::compare(reference::to_host(y, p.output_elements()), exact);
    r.time = bench::time_calls(o.repetitions, flusher, stream, call);
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
// (reference::data_gradient_gpu / filter_gradient_gpu) and held to the
// forward's bar (5e-7 relative L2: stricter than the 1e-6 a filter gradient
// is asked for). A failing fftconv row clears *all_pass.
bench::shape_result run_gradient_shape(const bench::run_shape& s, const options& o, const bench::l2_flusher* flush,
                                       cudaStream_t stream, bool* all_pass) {
    const problem& p = s.shape;
    const bool data = s.pass == bench::pass::data_gradient;
    bench::shape_result sr{s.role, p, false, s.seed, {}, s.pass};
    auto x = reference::make_device_array<float>(p.input_elements());
    auto w = reference::make_device_array<float>(p.filter_elements());
    auto dy = reference::make_device_array<float>(p.output_elements());
    reference::fill_normal(x.data(), x.size, s.seed, stream);
    reference::fill_normal(w.data(), w.size, s.seed ^ 0x5deece66dull, stream);
    reference::fill_normal(dy.data(), dy.size, s.seed ^ 0xd1ull, stream);
    const std::int64_t n = data ? p.input_elements() : p.filter_elements();
    auto out = reference::make_device_array<float>(n);
    std::vector<double> exact;
    {
        auto exact_device = reference::make_device_array<double>(n);
        if (data) reference::data_gradient_gpu(p, dy.data(), w.data(), exact_device.data(), stream);
        else reference::filter_gradient_gpu(p, x.data(), dy.data(), exact_device.data(), nullptr, stream);
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
        exact = reference::to_host(exact_device.data(), exact_device.size);
    }
    bench::progress("  fftconv: " + std::to_string(o.repetitions) + " timed calls");
    sr.algorithms.push_back(attempt("fftconv", [&] {
        bench::algorithm_result r;
        r.name = "fftconv";
        r.detail = data ? "conv2d_backward_data" : "conv2d_backward_filter";
        const std::size_t free_before = free_device_bytes();
        context ctx(stream);
        const auto call = [&] {
            if (data) ctx.conv2d_backward_data(p, dy.data(), w.data(), out.data());
            else ctx.conv2d_backward_filter(p, x.data(), dy.data(), out.data());
        };
        reference::fill_nan(out.data(), n, stream);
        call();  // warm-up: plans, workspace, scratch; and the output we check
        FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
        r.peak_bytes = free_before - free_device_bytes();
        r.accuracy = reference::compare(reference::to_host(out.data(), n), exact);
        r.time = bench::time_calls(o.repetitions, flush, stream, call);
        r.ran = true;
        return r;
    }));
    if (o.cudnn && bench::cudnn_available())
        for (auto& r : bench::run_cudnn_gradient_peers(p, s.pass, x.data(), w.data(), dy.data(), out.data(), exact,
                                                       o.repetitions, flush, stream))
            sr.algorithms.push_back(std::move(r));
    for (const auto& a : sr.algorithms)
        if (a.name == "fftconv" && !(a.ran && bench::passes(sr, a))) *all_pass = false;
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
            auto x = reference::make_device_array<float>(p.input_elements());
            auto w = reference::make_device_array<float>(p.filter_elements());
            auto y = reference::make_device_array<float>(p.output_elements());
            reference::fill_normal(x.data(), x.size, seed, stream);
            reference::fill_normal(w.data(), w.size, seed ^ 0x5deece66dull, stream);
            // The bias, when the shape has one: normal(0, 1), its own seed.
            reference::device_array<float> bias_memory;
            if (todo[i].bias) {
                bias_memory = reference::make_device_array<float>(p.out_channels);
                reference::fill_normal(bias_memory.data(), bias_memory.size, seed ^ 0xb1a5ull, stream);
            }
            const float* bias = todo[i].bias ? bias_memory.data() : nullptr;
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
                    return run_fftconv(p, 0, x.data(), w.data(), bias, y.data(), exact, o, flush, stream, &d);
                }));
                if (o.compare_generic && sr.algorithms.back().ran && d.path == path_kind::compiled) {
                    // Same inputs, same reference, same tile extent; runtime geometry.
                    const int t = d.geometry.tile_extent();
                    bench::progress("  fftconv, generic path forced to the compiled T=" + std::to_string(t) +
                                    ": " + std::to_string(o.repetitions) + " timed calls");
                    auto r = attempt(generic_row, [&] {
                        return run_fftconv(p, t, x.data(), w.data(), bias, y.data(), exact, o, flush, stream);
                    });
                    r.name = generic_row;
                    if (r.ran) r.detail += " (forced)";
                    sr.algorithms.push_back(std::move(r));
                    const tile_config* c = compiled_entry(p, t);
                    if (c != nullptr && std::find(compared.begin(), compared.end(), *c) == compared.end())
                        compared.push_back(*c);
                }
                if (o.cudnn) {
                    if (bench::cudnn_available()) {
                        for (auto& r : bench::run_cudnn_peers(p, x.data(), w.data(), bias, y.data(), exact,
                                                              o.repetitions, flush, stream))
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
                        return run_fftconv(p, t, x.data(), w.data(), bias, y.data(), exact, o, flush, stream);
                    });
                    r.name = name;
                    sr.algorithms.push_back(std::move(r));
                }
            }
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
