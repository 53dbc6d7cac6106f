#include "cudnn_peer.hpp"

#ifdef FFTCONV_HAVE_CUDNN

#include <cudnn.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

#include "fftconv/detail/runtime/check.hpp"
#include "half_io.hpp"
#include "progress.hpp"

namespace fftconv::bench {
namespace {

#define BENCH_CUDNN_TRY(call)                                                                \
    do {                                                                                     \
        const cudnnStatus_t code_ = (call);                                                  \
        if (code_ != CUDNN_STATUS_SUCCESS)                                                   \
            throw std::runtime_error(std::string(#call) + ": " + cudnnGetErrorString(code_)); \
    } while (0)

const char* algo_name(cudnnConvolutionFwdAlgo_t a) {
    switch (a) {
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
        case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
        case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
        case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
        default: return "UNKNOWN";
    }
}

// Descriptors for one problem, destroyed in reverse (rule of zero via unique_ptr).
// The whole operator of problem.hpp: zero padding (ph, pw) in the
// convolution descriptor, groups (cudnnSetConvolutionGroupCount, the filter
// [out, in / groups, kh, kw]), rectangular kernels, and a bias tensor
// [1, out, 1, 1] broadcast over batch, rows and columns. Tensors and filter
// of `element`; FP32 compute either way.
cudnnDataType_t data_type_of(element_type e) {
    switch (e) {
        case element_type::bfloat16: return CUDNN_DATA_BFLOAT16;
        case element_type::float16: return CUDNN_DATA_HALF;
        case element_type::float32: break;
    }
    return CUDNN_DATA_FLOAT;
}

struct descriptors {
    std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, decltype(&cudnnDestroy)> handle{nullptr, cudnnDestroy};
    std::unique_ptr<std::remove_pointer_t<cudnnTensorDescriptor_t>, decltype(&cudnnDestroyTensorDescriptor)>
        x{nullptr, cudnnDestroyTensorDescriptor}, y{nullptr, cudnnDestroyTensorDescriptor},
        bias{nullptr, cudnnDestroyTensorDescriptor};
    std::unique_ptr<std::remove_pointer_t<cudnnFilterDescriptor_t>, decltype(&cudnnDestroyFilterDescriptor)>
        w{nullptr, cudnnDestroyFilterDescriptor};
    std::unique_ptr<std::remove_pointer_t<cudnnConvolutionDescriptor_t>, decltype(&cudnnDestroyConvolutionDescriptor)>
        conv{nullptr, cudnnDestroyConvolutionDescriptor};

    element_type element;

    descriptors(const problem& p, cudaStream_t stream, element_type e = element_type::float32) : element(e) {
        const cudnnDataType_t data = data_type_of(e);
        cudnnHandle_t h;
        BENCH_CUDNN_TRY(cudnnCreate(&h));
        handle.reset(h);
        BENCH_CUDNN_TRY(cudnnSetStream(h, stream));
        cudnnTensorDescriptor_t t;
        BENCH_CUDNN_TRY(cudnnCreateTensorDescriptor(&t));
        x.reset(t);
        BENCH_CUDNN_TRY(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, data, int(p.batch),
                                                   int(p.in_channels), int(p.height), int(p.width)));
        BENCH_CUDNN_TRY(cudnnCreateTensorDescriptor(&t));
        y.reset(t);
        BENCH_CUDNN_TRY(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, data, int(p.batch),
                                                   int(p.out_channels), int(p.out_height()),
                                                   int(p.out_width())));
        BENCH_CUDNN_TRY(cudnnCreateTensorDescriptor(&t));
        bias.reset(t);
        BENCH_CUDNN_TRY(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, data, 1,
                                                   int(p.out_channels), 1, 1));
        cudnnFilterDescriptor_t f;
        BENCH_CUDNN_TRY(cudnnCreateFilterDescriptor(&f));
        w.reset(f);
        BENCH_CUDNN_TRY(cudnnSetFilter4dDescriptor(f, data, CUDNN_TENSOR_NCHW,
                                                   int(p.out_channels), int(p.group_in_channels()),
                                                   int(p.kernel.height), int(p.kernel.width)));
        cudnnConvolutionDescriptor_t c;
        BENCH_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&c));
        conv.reset(c);
        // F.conv2d is a cross-correlation; FP32 compute; FMA math forbids TF32.
        BENCH_CUDNN_TRY(cudnnSetConvolution2dDescriptor(c, int(p.padding.height), int(p.padding.width), 1, 1, 1,
                                                        1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
        BENCH_CUDNN_TRY(cudnnSetConvolutionGroupCount(c, int(p.groups)));
        BENCH_CUDNN_TRY(cudnnSetConvolutionMathType(c, e == element_type::float32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
        // cuDNN's idea of the output must be ours, or the comparison is void.
        int n = 0, k = 0, ho = 0, wo = 0;
        BENCH_CUDNN_TRY(cudnnGetConvolution2dForwardOutputDim(c, x.get(), f, &n, &k, &ho, &wo));
        if (n != p.batch || k != p.out_channels || ho != p.out_height() || wo != p.out_width())
            throw std::runtime_error("cuDNN's output " + std::to_string(n) + "x" + std::to_string(k) + "x" +
                                     std::to_string(ho) + "x" + std::to_string(wo) + " is not the problem's " +
                                     std::to_string(p.batch) + "x" + std::to_string(p.out_channels) + "x" +
                                     std::to_string(p.out_height()) + "x" + std::to_string(p.out_width()));
    }
};

bool strict_fp32(const cudnnConvolutionFwdAlgoPerf_t& r) {
    return r.status == CUDNN_STATUS_SUCCESS && r.mathType == CUDNN_FMA_MATH;
}

// An algorithm whose arithmetic is FP32 on the descriptors' data: strict FP32
// for float data (no TF32), FMA or tensor cores for half data (exact
// products, FP32 sums; not ALLOW_CONVERSION, which would round to a
// narrower type than the data's).
bool fp32_compute(const cudnnConvolutionFwdAlgoPerf_t& r, element_type e) {
    if (e == element_type::float32) return strict_fp32(r);
    return r.status == CUDNN_STATUS_SUCCESS && (r.mathType == CUDNN_FMA_MATH || r.mathType == CUDNN_TENSOR_OP_MATH);
}

// The peer's detail: the algorithm, and for half data the type and whether
// tensor cores compute it.
std::string forward_detail(cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math, element_type e, bool bias) {
    std::string d = algo_name(algo);
    if (e != element_type::float32)
        d += std::string(" ") + to_string(e) + (math == CUDNN_TENSOR_OP_MATH ? " tensor cores" : " FMA");
    return d + (bias ? " + AddTensor" : "");
}

// One call of the peer: cudnnConvolutionForward (y = conv(x, w)), then, when
// there is a bias, cudnnAddTensor (y += bias, broadcast over [B, ., Ho, Wo]).
// Both run inside the timed region: the peer's time is the whole operator's,
// as fftconv's is.
//
// Why not cudnnConvolutionBiasActivationForward, which fuses the bias into
// the convolution: without an activation it needs CUDNN_ACTIVATION_IDENTITY,
// which cuDNN supports only with CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM.
// Both peers would then be confined to that one algorithm, and
// "cudnn_fastest" would no longer be the fastest algorithm cuDNN has (FFT,
// Winograd, ... on these shapes). The separate add is also what PyTorch runs
// for F.conv2d(x, w, bias) on cuDNN (the convolution, then output.add_(bias)).
// The algorithm search (cudnnFind...) times the convolution alone; the add
// is the same for every algorithm, so it does not change the ranking.
algorithm_result run_algorithm(const char* name, const descriptors& d, const problem& p,
                               const cudnnConvolutionFwdAlgoPerf_t& perf, const void* x, const void* w,
                               const void* bias, void* y, const std::vector<double>& exact,
                               int repetitions, const l2_flusher* flusher, cudaStream_t stream) {
    const cudnnConvolutionFwdAlgo_t algo = perf.algo;
    algorithm_result r;
    r.name = name;
    r.element = d.element;
    r.detail = forward_detail(algo, perf.mathType, d.element, bias != nullptr);
    // The math type cuDNN ranked the algorithm with (for half data: tensor cores or FMA).
    BENCH_CUDNN_TRY(cudnnSetConvolutionMathType(d.conv.get(), perf.mathType));
    std::size_t bytes = 0;
    BENCH_CUDNN_TRY(cudnnGetConvolutionForwardWorkspaceSize(d.handle.get(), d.x.get(), d.w.get(),
                                                            d.conv.get(), d.y.get(), algo, &bytes));
    auto workspace = reference::make_device_array<char>(std::int64_t(std::max<std::size_t>(bytes, 1)));
    r.workspace_bytes = r.peak_bytes = bytes;
    const float one = 1.0f, zero = 0.0f;
    auto call = [&] {
        BENCH_CUDNN_TRY(cudnnConvolutionForward(d.handle.get(), &one, d.x.get(), x, d.w.get(), w,
                                                d.conv.get(), algo, workspace.data(), bytes, &zero,
                                                d.y.get(), y));
        if (bias != nullptr)
            BENCH_CUDNN_TRY(cudnnAddTensor(d.handle.get(), &one, d.bias.get(), bias, &one, d.y.get(), y));
    };
    if (d.element == element_type::float32) reference::fill_nan(static_cast<float*>(y), p.output_elements(), stream);
    else poison(d.element, y, p.output_elements(), stream);
    call();  // warm-up, and the output we check
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    r.accuracy = compare_output(widened_to_host(d.element, y, p.output_elements()), exact, d.element);
    r.time = time_calls(repetitions, flusher, stream, call);
    r.ran = true;
    return r;
}

// A row that says why a peer has no figures.
algorithm_result not_run(const char* name, const std::string& why) {
    algorithm_result r;
    r.name = name;
    r.detail = why;
    return r;
}

}  // namespace

bool cudnn_available() { return true; }

std::vector<algorithm_result> run_cudnn_peers(const problem& p, element_type element, const void* x,
                                              const void* w, const void* bias, void* y,
                                              const std::vector<double>& exact, int repetitions,
                                              const l2_flusher* flusher, cudaStream_t stream) {
    // A peer that fails (cuDNN refuses the configuration, runs out of
    // memory, ...) gives a row that says so, and the run goes on.
    std::vector<algorithm_result> results;
    const auto attempt = [&](const char* name, const auto& run) {
        try {
            results.push_back(run());
        } catch (const std::exception& e) {
            results.push_back(not_run(name, std::string("failed: ") + e.what()));
        }
    };
    std::unique_ptr<descriptors> made;
    try {
        made = std::make_unique<descriptors>(p, stream, element);
    } catch (const std::exception& e) {
        for (const char* name : {"cudnn_deterministic", "cudnn_fastest"})
            results.push_back(not_run(name, std::string("failed: ") + e.what()));
        return results;
    }
    const descriptors& d = *made;
    constexpr int most = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    const bool half = element != element_type::float32;
    const std::string arithmetic = half ? std::string(to_string(element)) + " FP32-compute" : "strict FP32";
    // The searches rank with the math type the descriptor was made with (a
    // run may have left another).
    const auto reset_math = [&] {
        BENCH_CUDNN_TRY(cudnnSetConvolutionMathType(d.conv.get(), half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
    };

    // Deterministic mode: the first deterministic, strict-FP32 algorithm of
    // the heuristics' ranking.
    attempt("cudnn_deterministic", [&] {
        cudnnConvolutionFwdAlgoPerf_t perf[most];
        int found = 0;
        reset_math();
        BENCH_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(d.handle.get(), d.x.get(), d.w.get(),
                                                               d.conv.get(), d.y.get(), most, &found, perf));
        for (int i = 0; i < found; ++i) {
            if (fp32_compute(perf[i], element) && perf[i].determinism == CUDNN_DETERMINISTIC) {
                progress(std::string("  cuDNN deterministic (") + algo_name(perf[i].algo) + "): " +
                         std::to_string(repetitions) + " timed calls");
                return run_algorithm("cudnn_deterministic", d, p, perf[i], x, w, bias, y, exact,
                                     repetitions, flusher, stream);
            }
        }
        return not_run("cudnn_deterministic", "none of the " + std::to_string(found) +
                                                  " algorithms cuDNN's heuristics rank is deterministic " + arithmetic);
    });

    // The fastest strict-FP32 algorithm cuDNN's own measurement finds.
    attempt("cudnn_fastest", [&] {
        cudnnConvolutionFwdAlgoPerf_t perf[most];
        int found = 0;
        progress("  cuDNN algorithm search (cudnnFindConvolutionForwardAlgorithm runs every algorithm)");
        reset_math();
        BENCH_CUDNN_TRY(cudnnFindConvolutionForwardAlgorithm(d.handle.get(), d.x.get(), d.w.get(),
                                                             d.conv.get(), d.y.get(), most, &found, perf));
        for (int i = 0; i < found; ++i) {  // sorted by time
            if (fp32_compute(perf[i], element)) {
                progress(std::string("  cuDNN fastest (") + algo_name(perf[i].algo) + "): " +
                         std::to_string(repetitions) + " timed calls");
                return run_algorithm("cudnn_fastest", d, p, perf[i], x, w, bias, y, exact, repetitions,
                                     flusher, stream);
            }
        }
        return not_run("cudnn_fastest", (half ? "no " + arithmetic : std::string("no strict-FP32")) +
                                            " algorithm succeeded in cuDNN's search of " + std::to_string(found));
    });
    return results;
}

namespace {

// What differs between the two gradients, for one set of peer code.
struct data_gradient_api {
    using algo_t = cudnnConvolutionBwdDataAlgo_t;
    using perf_t = cudnnConvolutionBwdDataAlgoPerf_t;
    static constexpr int count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    static const char* name(algo_t a) {
        switch (a) {
            case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
            case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
            case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
            case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
            case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
            case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
            default: return "UNKNOWN";
        }
    }
    static void heuristic(const descriptors& d, int most, int* found, perf_t* perf) {
        BENCH_CUDNN_TRY(cudnnGetConvolutionBackwardDataAlgorithm_v7(d.handle.get(), d.w.get(), d.y.get(),
                                                                    d.conv.get(), d.x.get(), most, found, perf));
    }
    static void find(const descriptors& d, int most, int* found, perf_t* perf) {
        BENCH_CUDNN_TRY(cudnnFindConvolutionBackwardDataAlgorithm(d.handle.get(), d.w.get(), d.y.get(),
                                                                  d.conv.get(), d.x.get(), most, found, perf));
    }
    static std::size_t workspace(const descriptors& d, algo_t a) {
        std::size_t bytes = 0;
        BENCH_CUDNN_TRY(cudnnGetConvolutionBackwardDataWorkspaceSize(d.handle.get(), d.w.get(), d.y.get(),
                                                                     d.conv.get(), d.x.get(), a, &bytes));
        return bytes;
    }
    // dx = backward data (w, dy)
    static void run(const descriptors& d, algo_t a, const float*, const float* w, const float* dy, float* out,
                    void* ws, std::size_t bytes) {
        const float one = 1.0f, zero = 0.0f;
        BENCH_CUDNN_TRY(cudnnConvolutionBackwardData(d.handle.get(), &one, d.w.get(), w, d.y.get(), dy,
                                                     d.conv.get(), a, ws, bytes, &zero, d.x.get(), out));
    }
    static std::int64_t elements(const problem& p) { return p.input_elements(); }
};

struct filter_gradient_api {
    using algo_t = cudnnConvolutionBwdFilterAlgo_t;
    using perf_t = cudnnConvolutionBwdFilterAlgoPerf_t;
    static constexpr int count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    static const char* name(algo_t a) {
        switch (a) {
            case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
            case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
            case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
            case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
            case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
            case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
            default: return "UNKNOWN";
        }
    }
    static void heuristic(const descriptors& d, int most, int* found, perf_t* perf) {
        BENCH_CUDNN_TRY(cudnnGetConvolutionBackwardFilterAlgorithm_v7(d.handle.get(), d.x.get(), d.y.get(),
                                                                      d.conv.get(), d.w.get(), most, found, perf));
    }
    static void find(const descriptors& d, int most, int* found, perf_t* perf) {
        BENCH_CUDNN_TRY(cudnnFindConvolutionBackwardFilterAlgorithm(d.handle.get(), d.x.get(), d.y.get(),
                                                                    d.conv.get(), d.w.get(), most, found, perf));
    }
    static std::size_t workspace(const descriptors& d, algo_t a) {
        std::size_t bytes = 0;
        BENCH_CUDNN_TRY(cudnnGetConvolutionBackwardFilterWorkspaceSize(d.handle.get(), d.x.get(), d.y.get(),
                                                                       d.conv.get(), d.w.get(), a, &bytes));
        return bytes;
    }
    // dw = backward filter (x, dy)
    static void run(const descriptors& d, algo_t a, const float* x, const float*, const float* dy, float* out,
                    void* ws, std::size_t bytes) {
        const float one = 1.0f, zero = 0.0f;
        BENCH_CUDNN_TRY(cudnnConvolutionBackwardFilter(d.handle.get(), &one, d.x.get(), x, d.y.get(), dy,
                                                       d.conv.get(), a, ws, bytes, &zero, d.w.get(), out));
    }
    static std::int64_t elements(const problem& p) { return p.filter_elements(); }
};

template <class Api>
algorithm_result run_gradient_algorithm(const char* name, const descriptors& d, const problem& p,
                                        typename Api::algo_t algo, const float* x, const float* w, const float* dy,
                                        float* out, const std::vector<double>& exact, int repetitions,
                                        const l2_flusher* flusher, cudaStream_t stream) {
    algorithm_result r;
    r.name = name;
    r.detail = Api::name(algo);
    const std::size_t bytes = Api::workspace(d, algo);
    auto workspace = reference::make_device_array<char>(std::int64_t(std::max<std::size_t>(bytes, 1)));
    r.workspace_bytes = r.peak_bytes = bytes;
    auto call = [&] { Api::run(d, algo, x, w, dy, out, workspace.data(), bytes); };
    reference::fill_nan(out, Api::elements(p), stream);
    call();
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    r.accuracy = reference::compare(reference::to_host(out, Api::elements(p)), exact);
    r.time = time_calls(repetitions, flusher, stream, call);
    r.ran = true;
    return r;
}

template <class Api>
std::vector<algorithm_result> gradient_peers(const problem& p, const float* x, const float* w, const float* dy,
                                             float* out, const std::vector<double>& exact, int repetitions,
                                             const l2_flusher* flusher, cudaStream_t stream) {
    std::vector<algorithm_result> results;
    const auto attempt = [&](const char* name, const auto& run) {
        try {
            results.push_back(run());
        } catch (const std::exception& e) {
            results.push_back(not_run(name, std::string("failed: ") + e.what()));
        }
    };
    std::unique_ptr<descriptors> made;
    try {
        made = std::make_unique<descriptors>(p, stream);
    } catch (const std::exception& e) {
        for (const char* name : {"cudnn_deterministic", "cudnn_fastest"})
            results.push_back(not_run(name, std::string("failed: ") + e.what()));
        return results;
    }
    const descriptors& d = *made;
    const auto usable = [](const typename Api::perf_t& r) {
        return r.status == CUDNN_STATUS_SUCCESS && r.mathType == CUDNN_FMA_MATH;
    };
    attempt("cudnn_deterministic", [&] {
        typename Api::perf_t perf[Api::count];
        int found = 0;
        Api::heuristic(d, Api::count, &found, perf);
        for (int i = 0; i < found; ++i)
            if (usable(perf[i]) && perf[i].determinism == CUDNN_DETERMINISTIC) {
                progress(std::string("  cuDNN deterministic (") + Api::name(perf[i].algo) + "): " +
                         std::to_string(repetitions) + " timed calls");
                return run_gradient_algorithm<Api>("cudnn_deterministic", d, p, perf[i].algo, x, w, dy, out,
                                                   exact, repetitions, flusher, stream);
            }
        return not_run("cudnn_deterministic", "no deterministic strict-FP32 algorithm among " +
                                                  std::to_string(found) + " ranked by cuDNN's heuristics");
    });
    attempt("cudnn_fastest", [&] {
        typename Api::perf_t perf[Api::count];
        int found = 0;
        progress("  cuDNN algorithm search (runs every algorithm)");
        Api::find(d, Api::count, &found, perf);
        for (int i = 0; i < found; ++i)
            if (usable(perf[i])) {
                progress(std::string("  cuDNN fastest (") + Api::name(perf[i].algo) + "): " +
                         std::to_string(repetitions) + " timed calls");
                return run_gradient_algorithm<Api>("cudnn_fastest", d, p, perf[i].algo, x, w, dy, out, exact,
                                                   repetitions, flusher, stream);
            }
        return not_run("cudnn_fastest", "no strict-FP32 algorithm succeeded in cuDNN's search of " +
                                            std::to_string(found));
    });
    return results;
}

}  // namespace

std::vector<algorithm_result> run_cudnn_gradient_peers(const problem& p, pass g, const float* x, const float* w,
                                                       const float* dy, float* out,
                                                       const std::vector<double>& exact, int repetitions,
                                                       const l2_flusher* flusher, cudaStream_t stream) {
    if (g == pass::data_gradient)
        return gradient_peers<data_gradient_api>(p, x, w, dy, out, exact, repetitions, flusher, stream);
    return gradient_peers<filter_gradient_api>(p, x, w, dy, out, exact, repetitions, flusher, stream);
}

}  // namespace fftconv::bench

#else  // no cuDNN in this build

namespace fftconv::bench {
bool cudnn_available() { return false; }
std::vector<algorithm_result> run_cudnn_peers(const problem&, element_type, const void*, const void*, const void*,
                                              void*, const std::vector<double>&, int, const l2_flusher*,
                                              cudaStream_t) {
    return {};
}
std::vector<algorithm_result> run_cudnn_gradient_peers(const problem&, pass, const float*, const float*,
                                                       const float*, float*, const std::vector<double>&, int,
                                                       const l2_flusher*, cudaStream_t) {
    return {};
}
}  // namespace fftconv::bench

#endif
