#include <algorithm>
#include <chrono>
#include <numeric>

#include "fftconv/detail/runtime/check.hpp"
#include "timing.hpp"

namespace fftconv::bench {
namespace {

__global__ void scribble(float* p, std::int64_t n, float v) {
    for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
         i += std::int64_t{gridDim.x} * blockDim.x)
        p[i] = v;
}

std::int64_t flush_elements(int device) {
    int l2 = 0;
    FFTCONV_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    return 2 * std::int64_t(std::max(l2, 1 << 20)) / std::int64_t(sizeof(float));
}

struct event_pair {
    cudaEvent_t start = nullptr, stop = nullptr;
    event_pair() {
        FFTCONV_CUDA_TRY(cudaEventCreate(&start));
        FFTCONV_CUDA_TRY(cudaEventCreate(&stop));
    }
    ~event_pair() {
        (void)cudaEventDestroy(start);
        (void)cudaEventDestroy(stop);
    }
    event_pair(const event_pair&) = delete;
    event_pair& operator=(const event_pair&) = delete;
};

}  // namespace

l2_flusher::l2_flusher(int device)
    : buffer_(reference::make_device_array<float>(flush_elements(device))) {}

void l2_flusher::flush(cudaStream_t stream) const {
    static float value = 0;
    value += 1;  // a different value each time: nothing can skip the write
    scribble<<<1024, 256, 0, stream>>>(buffer_.data(), buffer_.size, value);
    FFTCONV_CHECK_LAUNCH();
}

timing time_calls(int repetitions, const l2_flusher* flusher, cudaStream_t stream,
                  const std::function<void()>& call) {
    std::vector<event_pair> events(std::size_t(std::max(repetitions, 1)));
    for (auto& e : events) {
        if (flusher != nullptr) flusher->flush(stream);
        FFTCONV_CUDA_TRY(cudaEventRecord(e.start, stream));
        call();
        FFTCONV_CUDA_TRY(cudaEventRecord(e.stop, stream));
    }
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    timing t;
    for (auto& e : events) {
        float ms = 0;
        FFTCONV_CUDA_TRY(cudaEventElapsedTime(&ms, e.start, e.stop));
        t.samples_ms.push_back(ms);
    }
    std::vector<float> sorted = t.samples_ms;
    std::sort(sorted.begin(), sorted.end());
    t.min_ms = sorted.front();
    const std::size_t n = sorted.size();
    t.median_ms = n % 2 ? sorted[n / 2] : 0.5 * (double(sorted[n / 2 - 1]) + sorted[n / 2]);
    t.mean_ms = std::accumulate(sorted.begin(), sorted.end(), 0.0) / double(n);

    const int calls = std::clamp(repetitions, 1, host_calls);
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) call();
    const auto end = std::chrono::steady_clock::now();
    FFTCONV_CUDA_TRY(cudaStreamSynchronize(stream));
    t.host_us = std::chrono::duration<double, std::micro>(end - start).count() / calls;
    return t;
}

}  // namespace fftconv::bench
