// bench/timing.hpp — how every call in the bench is timed: an L2 flush
// before each call (a write of twice the L2), CUDA events around the call
// alone, many repetitions, then mean / median / min.
#pragma once

#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

#include "reference.hpp"

namespace fftconv::bench {

struct timing {
    std::vector<float> samples_ms;
    double mean_ms = 0, median_ms = 0, min_ms = 0;
};

class l2_flusher {
public:
    explicit l2_flusher(int device);
    void flush(cudaStream_t stream) const;  // writes 2 x L2 bytes
    std::size_t bytes() const { return std::size_t(buffer_.size) * sizeof(float); }

private:
    reference::device_array<float> buffer_;
};

// Runs `call` `repetitions` times on `stream`, each preceded by a flush when
// `flusher` is non-null; one event pair around each call.
timing time_calls(int repetitions, const l2_flusher* flusher, cudaStream_t stream,
                  const std::function<void()>& call);

}  // namespace fftconv::bench
