// fftconv/detail/runtime/call_graphs.hpp — a context's repeated calls replayed
// as CUDA graphs.
//
// Why: an FFT-path call enqueues four or more kernels (transforms, the
// spectral product, the inverse, cuFFT's or cuBLAS's where they run), and on
// the H200's host each launch costs ~4 µs: an eager caller pays 25–35 µs of
// host time a call whatever the problem's size. A call seen before — the
// same problem, route, pointers and workspace limit — is captured once into
// a graph and from then on enqueued by one cudaGraphLaunch.
//
// When: the first sighting of a call runs eagerly (it makes the cuFFT plans
// and grows the workspace); the second is captured (nothing may allocate
// then: where something would, the capture is dropped and the call runs
// eagerly); later ones replay. Graphs hold the addresses of the engine's
// workspace and plans, so every change of those (engine::generation) drops
// them all. Never while the caller captures the stream itself (their graph
// records our kernels), nor while a launch_recorder asks which kernels run.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <cuda_runtime_api.h>

#include "fftconv/problem.hpp"

namespace fftconv::detail {

class engine;

// Everything that decides what a forward call enqueues, besides the
// engine's resources (engine::generation).
struct call_key {
    problem p;
    int element_type;
    const void* x;
    void* y;
    const void* w;         // the filter, or null with a spectrum
    const void* spectrum;  // a filter spectrum given by the caller, or null
    const void* bias;
    const void* route_entry;  // the specialization, or null
    int route_path;
    int tile_extent;
    std::size_t workspace_limit;
    friend bool operator==(const call_key&, const call_key&) = default;
};

struct graph_exec_destroy {
    void operator()(cudaGraphExec_t g) const noexcept { (void)cudaGraphExecDestroy(g); }
};
using owned_graph_exec = std::unique_ptr<std::remove_pointer_t<cudaGraphExec_t>, graph_exec_destroy>;

class call_graphs {
public:
    // The calls remembered at once (the most recent): a training step's few
    // layers, or a loop over a few shapes.
    static constexpr std::size_t capacity = 16;
    // Calls the cost model gives longer than this run eagerly: ten times the
    // host time of the FFT path's launches, which the device's work hides
    // then; and the two 0.61 ms leaderboard shapes measured 2% slower as
    // graphs (docs/performance.md, d2).
    static constexpr double longest_replayed_seconds = 0.3e-3;
    // Captures a call may drop before it runs eagerly for good (until the
    // graphs are dropped): one may fail on what only that call made.
    static constexpr int most_dropped_captures = 2;

    // Enqueues the call `key` on e.stream(): by replaying its graph, by
    // capturing `enqueue` into one, or by running `enqueue` (which enqueues
    // the call's work; it may run twice when a capture is dropped). A
    // template, so that a replay wraps nothing in a std::function.
    template <class Enqueue>
    void run(engine& e, const call_key& key, Enqueue&& enqueue) {
        const step next = next_step(e, key);
        if (next.replayed) return;
        if (next.capture_into != nullptr && capture(e, *next.capture_into, std::function<void()>(std::ref(enqueue))))
            return;
        if (next.capture_into != nullptr) ++next.capture_into->dropped_captures;
        enqueue();  // may grow the workspace: the next call then drops every graph
    }

    void set_enabled(bool enabled) noexcept;
    // Drops every graph and sighting (release(): their memory goes back now).
    void clear() noexcept { entries_.clear(); }
    bool enabled() const noexcept { return enabled_; }
    // Graphs held, and calls enqueued by replaying one (tests).
    std::size_t graphs() const noexcept;
    std::uint64_t replays() const noexcept { return replays_; }
    // Why the latest capture was dropped (empty: none was), for tests and
    // for a caller wondering why a call is not replayed.
    const std::string& last_dropped_capture() const noexcept { return last_drop_; }

private:
    struct entry {
        call_key key;
        owned_graph_exec graph;  // null: seen once, or its captures were dropped
        int dropped_captures = 0;
        std::uint64_t last_use = 0;
    };
    // What run does with `key`: its graph replayed (on e.stream()), or the
    // call to capture into `capture_into`, or (null) to run eagerly.
    struct step {
        bool replayed = false;
        entry* capture_into = nullptr;
    };
    step next_step(engine& e, const call_key& key);
    entry& remember(const call_key& key);
    // Captures `enqueue` into a graph for `slot` and launches it; false (the
    // capture dropped, nothing enqueued) where that cannot be done.
    bool capture(engine& e, entry& slot, const std::function<void()>& enqueue);

    std::vector<entry> entries_;
    std::uint64_t generation_ = 0;  // the engine's, when the graphs were made
    std::uint64_t uses_ = 0;
    std::uint64_t replays_ = 0;
    bool enabled_ = true;
    std::string last_drop_;
};

}  // namespace fftconv::detail
