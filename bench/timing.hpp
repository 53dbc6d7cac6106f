// bench/timing.hpp — how every call in the bench is timed: an L2 flush
// before each call (a write of twice the L2), CUDA events around the call
// alone, many repetitions, then mean / median / min. Then the host's side:
// back-to-back calls with no flush and no events, on the host clock.
#pragma once

#include <functional>
#include <vector>

#include <cuda_runtime_api.h>

#include "reference.hpp"

namespace fftconv::bench {

struct timing {
    std::vector<float> samples_ms;
    double mean_ms = 0, median_ms = 0, min_ms = 0;
    // What a call costs the calling thread in a steady state: host seconds
    // from the first of host_calls back-to-back calls to the return of the
    // last (not waiting for the device), per call, in microseconds.
    double host_us = 0;
};

// Back-to-back calls the host time takes: few enough that the device's
// launch queue never fills (a full queue would make the host wait out the
// device's time instead of measuring its own).
inline constexpr int host_calls = 50;

class l2_flusher {
public:
    explicit l2_flusher(int device);
    void flush(cudaStream_t stream) const;  // writes 2 x L2 bytes
    std::size_t bytes() const { return std::size_t(buffer_.size) * sizeof(float); }

private:
    reference::device_array<float> buffer_;
};

// Runs `call` `repetitions` times on `stream`, each preceded by a flush when
// `flusher` is non-null; one event pair around each call. Then
// min(repetitions, host_calls) calls back to back for timing::host_us.
timing time_calls(int repetitions, const l2_flusher* flusher, cudaStream_t stream,
                  const std::function<void()>& call);

}  // namespace fftconv::bench
