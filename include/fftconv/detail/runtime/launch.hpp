// fftconv/detail/runtime/launch.hpp — which kernels a call launched, for
// tests (launch.cuh launches them).
#pragma once

#include <vector>

namespace fftconv::detail {

// While a launch_recorder lives, every kernel that this thread's fftconv
// calls launch (and the spectral GEMM's launcher) is appended to `log`: tests
// see which instantiation ran. Recorders nest; the innermost one records.
class launch_recorder {
public:
    explicit launch_recorder(std::vector<const void*>& log);
    ~launch_recorder();
    launch_recorder(const launch_recorder&) = delete;
    launch_recorder& operator=(const launch_recorder&) = delete;

private:
    std::vector<const void*>* outer_;
};

// Appends `code` to the active recorder's log, if any.
void record_launch(const void* code);

// Whether a recorder is active on this thread (a replayed graph launches its
// kernels without passing through launch()).
bool recording_launches() noexcept;

}  // namespace fftconv::detail
