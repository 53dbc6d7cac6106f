// src/runtime/call_graphs.cpp — see fftconv/detail/runtime/call_graphs.hpp.
#include "fftconv/detail/runtime/call_graphs.hpp"

#include <algorithm>
#include <exception>
#include <string>

#include "fftconv/detail/runtime/check.hpp"
#include "fftconv/detail/runtime/engine.hpp"
#include "fftconv/detail/runtime/launch.hpp"

namespace fftconv::detail {

void call_graphs::set_enabled(bool enabled) noexcept {
    enabled_ = enabled;
    if (!enabled) clear();
}

std::size_t call_graphs::graphs() const noexcept {
    return std::size_t(std::count_if(entries_.begin(), entries_.end(), [](const entry& e) { return bool(e.graph); }));
}

call_graphs::entry& call_graphs::remember(const call_key& key) {
    if (entries_.size() < capacity) return entries_.emplace_back(entry{key, {}});
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const entry& a, const entry& b) { return a.last_use < b.last_use; });
    *oldest = entry{key, {}};
    return *oldest;
}

bool call_graphs::capture(engine& e, entry& slot, const std::function<void()>& enqueue) {
    const cudaStream_t target = e.stream();
    const cudaStream_t stream = e.begin_own_capture();
    const auto dropped = [&](std::string why) {
        (void)cudaGetLastError();  // the capture's own error, not sticky: the call then runs eagerly
        last_drop_ = std::move(why);
        return false;
    };
    if (const cudaError_t begun = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
        begun != cudaSuccess) {
        e.end_own_capture();
        return dropped(std::string("cudaStreamBeginCapture: ") + cudaGetErrorName(begun));
    }
    std::string failure;
    try {
        enqueue();
    } catch (const std::exception& error) {
        failure = error.what();  // e.g. a plan or more workspace needed: nothing of it ran
    } catch (...) {
        failure = "an exception";
    }
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    e.end_own_capture();
    cudaGraphExec_t made = nullptr;
    const cudaError_t instantiated =
        failure.empty() && ended == cudaSuccess ? cudaGraphInstantiate(&made, graph, 0) : cudaSuccess;
    if (graph != nullptr) (void)cudaGraphDestroy(graph);
    if (!failure.empty()) return dropped(failure);
    if (ended != cudaSuccess) return dropped(std::string("cudaStreamEndCapture: ") + cudaGetErrorName(ended));
    if (instantiated != cudaSuccess)
        return dropped(std::string("cudaGraphInstantiate: ") + cudaGetErrorName(instantiated));
    slot.graph.reset(made);
    FFTCONV_CUDA_TRY(cudaGraphLaunch(made, target));
    return true;
}

call_graphs::step call_graphs::next_step(engine& e, const call_key& key) {
    if (!enabled_ || e.capturing() || recording_launches()) return {};
    if (e.generation() != generation_) {  // the graphs may refer to what is gone; the sightings stay
        for (entry& x : entries_) {
            x.graph.reset();
            x.dropped_captures = 0;
        }
        generation_ = e.generation();
    }
    auto found = std::find_if(entries_.begin(), entries_.end(), [&](const entry& x) { return x.key == key; });
    if (found == entries_.end()) {  // first sighting: eager, making what the call needs
        remember(key).last_use = ++uses_;
        return {};
    }
    entry& slot = *found;
    slot.last_use = ++uses_;
    if (slot.graph) {
        FFTCONV_CUDA_TRY(cudaGraphLaunch(slot.graph.get(), e.stream()));
        ++replays_;
        return {.replayed = true};
    }
    if (slot.dropped_captures >= most_dropped_captures) return {};
    return {.capture_into = &slot};
}

}  // namespace fftconv::detail
