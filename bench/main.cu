// bench/main.cu — fftconv-bench: fftconv on the leaderboard shapes (or your
// own), verified against the float64 oracle and timed against cuDNN.
#include <cublas_v2.h>
#include <cufft.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "cudnn_peer.hpp"
#include "fftconv/detail/check.hpp"
#include "fftconv/fftconv.hpp"
#include "leaderboard.hpp"
#include "report.hpp"

#ifdef FFTCONV_HAVE_CUDNN
#include <cudnn.h>
#endif

#ifndef FFTCONV_COMMIT
#define FFTCONV_COMMIT "unknown"
#endif

using namespace fftconv;

namespace {

struct options {
    std::vector<problem> shapes;     // empty: the leaderboard
    std::vector<int> tile_sweep;     // non-empty: time fftconv at each forced tile extent
    int repetitions = 100;
    bool flush = true;
    bool reuse_filter = false;
    bool cudnn = true;
    std::string out_prefix = "fftconv-bench";
    std::string commit = FFTCONV_COMMIT;
};

[[noreturn]] void usage(const char* error) {
    if (error) std::fprintf(stderr, "fftconv-bench: %s\n\n", error);
    std::fprintf(stderr,
                 "usage: fftconv-bench [options]\n"
                 "  (no options)            the 10 leaderboard shapes, fftconv and cuDNN\n"
                 "  --shape B,Cin,Cout,H,W,K  a custom shape instead (repeatable)\n"
                 "  --reps N                timed calls per algorithm and shape (default 100, at least 1)\n"
                 "  --no-flush              do not flush L2 before each call\n"
                 "  --reuse-filter          transform the filter once and reuse it (inference)\n"
                 "  --no-cudnn              skip the cuDNN peers\n"

                 "  --tiles T1,T2,...       sweep: fftconv with each forced tile extent (generic path)\n"
                 "  --out PREFIX            write PREFIX.json, PREFIX.md, PREFIX.svg (default fftconv-bench)\n"
                 "  --commit HASH           the commit to record (default: the build's)\n");
    std::exit(2);
}

std::vector<std::int64_t> parse_list(const std::string& s, const char* what) {
    std::vector<std::int64_t> v;
    std::stringstream in(s);
    std::string item;
    while (std::getline(in, item, ',')) {
        char* end = nullptr;
        const long long n = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end != '\0') usage((std::string("bad number '") + item + "' in " + what).c_str());
        v.push_back(n);
    }
    return v;
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage((a + " needs a value").c_str());
            return argv[++i];
        };
        if (a == "--shape") {
            const auto v = parse_list(value(), "--shape");
            if (v.size() != 6) usage("--shape takes batch,in_channels,out_channels,height,width,kernel");
            o.shapes.push_back(problem{v[0], v[1], v[2], v[3], v[4], v[5]});
        } else if (a == "--reps") {
            const auto v = parse_list(value(), "--reps");
            if (v.size() != 1 || v[0] < 1) usage("--reps takes one number >= 1");
            o.repetitions = int(v[0]);
        } else if (a == "--tiles") {
            for (auto t : parse_list(value(), "--tiles")) o.tile_sweep.push_back(int(t));
        } else if (a == "--no-flush") {
            o.flush = false;
        } else if (a == "--reuse-filter") {
            o.reuse_filter = true;

        } else if (a == "--no-cudnn") {
            o.cudnn = false;
        } else if (a == "--out") {
            o.out_prefix = value();
        } else if (a == "--commit") {
            o.commit = value();
        } else if (a == "--help" || a == "-h") {
            usage(nullptr);
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    return o;
}

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

// fftconv on one shape in a fresh context (so its memory is this shape's alone).
bench::algorithm_result run_fftconv(const problem& p, int forced_tile, const float* x, const float* w,
                                    float* y, const std::vector<double>& exact, const options& o,
                                    const bench::l2_flusher* flusher, cudaStream_t stream) {
    bench::algorithm_result r;
    r.name = "fftconv";
    const std::size_t free_before = free_device_bytes();
    context ctx(stream);
    ctx.force_tile_extent(forced_tile);
    const dispatch_decision d = ctx.plan(p);
    r.detail = std::string(to_string(d.path)) + " T=" + std::to_string(d.config.tile_extent);
    r.workspace_bytes = ctx.workspace_size(p);

    reference::fill_nan(y, p.output_elements(), stream);
    std::function<void()> call;
    std::unique_ptr<filter_spectrum> spectrum;
    if (o.reuse_filter) {
        spectrum = std::make_unique<filter_spectrum>(ctx.transform_filter(p, w));
        call = [&] { ctx.conv2d(p, x, *spectrum, y); };
    } else {
        call = [&] { ctx.conv2d(p, x, w, y); };
    }
    call();  // warm-up: plans, workspace; and the output we check
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    r.peak_bytes = free_before - free_device_bytes();
    r.accuracy = reference::compare(reference::to_host(y, p.output_elements()), exact);
    r.time = bench::time_calls(o.repetitions, flusher, stream, call);
    r.ran = true;
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
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
        std::vector<std::pair<std::string, problem>> todo;
        std::vector<std::uint64_t> seeds;
        if (o.shapes.empty()) {
            for (const auto& s : reference::leaderboard) {
                todo.emplace_back(s.role, s.as_problem());
                seeds.push_back(s.seed);
            }
        } else {
            for (std::size_t i = 0; i < o.shapes.size(); ++i) {
                todo.emplace_back("custom", o.shapes[i]);
                seeds.push_back(1000 + i);
            }
        }

        bool all_pass = true;
        for (std::size_t i = 0; i < todo.size(); ++i) {
            const problem& p = todo[i].second;
            validate(p);
            bench::shape_result sr{todo[i].first, p, seeds[i], {}};
            auto x = reference::make_device_array<float>(p.input_elements());
            auto w = reference::make_device_array<float>(p.filter_elements());
            auto y = reference::make_device_array<float>(p.output_elements());
            reference::fill_normal(x.data(), x.size, seeds[i], stream);
            reference::fill_normal(w.data(), w.size, seeds[i] ^ 0x5deece66dull, stream);
            std::vector<double> exact;
            {
                auto exact_device = reference::make_device_array<double>(p.output_elements());
                reference::direct_conv_gpu(p, x.data(), w.data(), exact_device.data(), stream);
                FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
                exact = reference::to_host(exact_device.data(), exact_device.size);
            }
            std::fprintf(stderr, "[%zu/%zu] %s\n", i + 1, todo.size(), to_string(p).c_str());
            if (o.tile_sweep.empty()) {
                sr.algorithms.push_back(run_fftconv(p, 0, x.data(), w.data(), y.data(), exact, o, flush, stream));
                if (o.cudnn) {
                    if (bench::cudnn_available()) {
                        for (auto& r : bench::run_cudnn_peers(p, x.data(), w.data(), y.data(), exact,
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
                    if (t < p.kernel_extent) continue;
                    auto r = run_fftconv(p, t, x.data(), w.data(), y.data(), exact, o, flush, stream);
                    r.name = "fftconv_T" + std::to_string(t);
                    sr.algorithms.push_back(std::move(r));
                }
            }
            for (const auto& a : sr.algorithms)
                if (a.ran && a.name.rfind("fftconv", 0) == 0 && !a.accuracy.passes()) all_pass = false;
            results.push_back(std::move(sr));
        }

        bench::print_table(info, results);
        bench::write_json(o.out_prefix + ".json", info, results);
        bench::write_markdown(o.out_prefix + ".md", info, results);
        bench::write_svg(o.out_prefix + ".svg", info, results);
        std::printf("\nwrote %s.json, %s.md, %s.svg\n", o.out_prefix.c_str(), o.out_prefix.c_str(),
                    o.out_prefix.c_str());
        (void)cudaStreamDestroy(stream);
        if (!all_pass) {
            std::printf("\n*** ACCURACY CHECK FAILED: fftconv missed the bar on at least one shape (see above) ***\n");
            return 1;
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fftconv-bench: %s\n", e.what());
        return 1;
    }
}
