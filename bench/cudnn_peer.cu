#include "cudnn_peer.hpp"

#ifdef FFTCONV_HAVE_CUDNN

#include <cudnn.h>

#include <stdexcept>
#include <string>

#include "fftconv/detail/check.hpp"
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
struct descriptors {
    std::unique_ptr<std::remove_pointer_t<cudnnHandle_t>, decltype(&cudnnDestroy)> handle{nullptr, cudnnDestroy};
    std::unique_ptr<std::remove_pointer_t<cudnnTensorDescriptor_t>, decltype(&cudnnDestroyTensorDescriptor)>
        x{nullptr, cudnnDestroyTensorDescriptor}, y{nullptr, cudnnDestroyTensorDescriptor};
    std::unique_ptr<std::remove_pointer_t<cudnnFilterDescriptor_t>, decltype(&cudnnDestroyFilterDescriptor)>
        w{nullptr, cudnnDestroyFilterDescriptor};
    std::unique_ptr<std::remove_pointer_t<cudnnConvolutionDescriptor_t>, decltype(&cudnnDestroyConvolutionDescriptor)>
        conv{nullptr, cudnnDestroyConvolutionDescriptor};

    descriptors(const problem& p, cudaStream_t stream) {
        cudnnHandle_t h;
        BENCH_CUDNN_TRY(cudnnCreate(&h));
        handle.reset(h);
        BENCH_CUDNN_TRY(cudnnSetStream(h, stream));
        cudnnTensorDescriptor_t t;
        BENCH_CUDNN_TRY(cudnnCreateTensorDescriptor(&t));
        x.reset(t);
        BENCH_CUDNN_TRY(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(p.batch),
                                                   int(p.in_channels), int(p.height), int(p.width)));
        BENCH_CUDNN_TRY(cudnnCreateTensorDescriptor(&t));
        y.reset(t);
        BENCH_CUDNN_TRY(cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, int(p.batch),
                                                   int(p.out_channels), int(p.out_height()),
                                                   int(p.out_width())));
        cudnnFilterDescriptor_t f;
        BENCH_CUDNN_TRY(cudnnCreateFilterDescriptor(&f));
        w.reset(f);
        BENCH_CUDNN_TRY(cudnnSetFilter4dDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                                   int(p.out_channels), int(p.in_channels),
                                                   int(p.kernel.height), int(p.kernel.height)));
        cudnnConvolutionDescriptor_t c;
        BENCH_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&c));
        conv.reset(c);
        // F.conv2d is a cross-correlation; FP32 compute; FMA math forbids TF32.
        BENCH_CUDNN_TRY(cudnnSetConvolution2dDescriptor(c, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                                        CUDNN_DATA_FLOAT));
        BENCH_CUDNN_TRY(cudnnSetConvolutionMathType(c, CUDNN_FMA_MATH));
    }
};

bool strict_fp32(const cudnnConvolutionFwdAlgoPerf_t& r) {
    return r.status == CUDNN_STATUS_SUCCESS && r.mathType == CUDNN_FMA_MATH;
}

algorithm_result run_algorithm(const char* name, const descriptors& d, const problem& p,
                               cudnnConvolutionFwdAlgo_t algo, const float* x, const float* w,
                               float* y, const std::vector<double>& exact, int repetitions,
                               const l2_flusher* flusher, cudaStream_t stream) {
    algorithm_result r;
    r.name = name;
    r.detail = algo_name(algo);
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
    };
    reference::fill_nan(y, p.output_elements(), stream);
    call();  // warm-up, and the output we check
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    r.accuracy = reference::compare(reference::to_host(y, p.output_elements()), exact);
    r.time = time_calls(repetitions, flusher, stream, call);
    r.ran = true;
    return r;
}

}  // namespace

bool cudnn_available() { return true; }

std::vector<algorithm_result> run_cudnn_peers(const problem& p, const float* x, const float* w,
                                              float* y, const std::vector<double>& exact,
                                              int repetitions, const l2_flusher* flusher,
                                              cudaStream_t stream) {
    std::vector<algorithm_result> results;
    const descriptors d(p, stream);
    constexpr int most = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    cudnnConvolutionFwdAlgoPerf_t perf[most];
    int found = 0;

    // Deterministic mode: the first deterministic, strict-FP32 algorithm of
    // the heuristics' ranking.
    BENCH_CUDNN_TRY(cudnnGetConvolutionForwardAlgorithm_v7(d.handle.get(), d.x.get(), d.w.get(),
                                                           d.conv.get(), d.y.get(), most, &found, perf));
    for (int i = 0; i < found; ++i) {
        if (strict_fp32(perf[i]) && perf[i].determinism == CUDNN_DETERMINISTIC) {
            progress(std::string("  cuDNN deterministic (") + algo_name(perf[i].algo) + "): " +
                     std::to_string(repetitions) + " timed calls");
            results.push_back(run_algorithm("cudnn_deterministic", d, p, perf[i].algo, x, w, y, exact,
                                            repetitions, flusher, stream));
            break;
        }
    }

    // The fastest strict-FP32 algorithm cuDNN's own measurement finds.
    progress("  cuDNN algorithm search (cudnnFindConvolutionForwardAlgorithm runs every algorithm)");
    BENCH_CUDNN_TRY(cudnnFindConvolutionForwardAlgorithm(d.handle.get(), d.x.get(), d.w.get(),
                                                         d.conv.get(), d.y.get(), most, &found, perf));
    for (int i = 0; i < found; ++i) {  // sorted by time
        if (strict_fp32(perf[i])) {
            progress(std::string("  cuDNN fastest (") + algo_name(perf[i].algo) + "): " +
                     std::to_string(repetitions) + " timed calls");
            results.push_back(run_algorithm("cudnn_fastest", d, p, perf[i].algo, x, w, y, exact,
                                            repetitions, flusher, stream));
            break;
        }
    }
    return results;
}

}  // namespace fftconv::bench

#else  // no cuDNN in this build

namespace fftconv::bench {
bool cudnn_available() { return false; }
std::vector<algorithm_result> run_cudnn_peers(const problem&, const float*, const float*, float*,
                                              const std::vector<double>&, int, const l2_flusher*,
                                              cudaStream_t) {
    return {};
}
}  // namespace fftconv::bench

#endif
