// src/runtime/launch.cpp — the launch recorder (fftconv/detail/runtime/launch.hpp).
#include "fftconv/detail/runtime/launch.hpp"

namespace fftconv::detail {
namespace {

thread_local std::vector<const void*>* recording = nullptr;

}  // namespace

launch_recorder::launch_recorder(std::vector<const void*>& log) : outer_(recording) { recording = &log; }

launch_recorder::~launch_recorder() { recording = outer_; }

void record_launch(const void* code) {
    if (recording != nullptr) recording->push_back(code);
}

bool recording_launches() noexcept { return recording != nullptr; }

}  // namespace fftconv::detail
