// python/src/device_array.hpp — a float32 NCHW array in CUDA memory that
// fftconv allocated itself, for results whose inputs came from a framework
// the Python layer cannot allocate with (JAX, or any DLPack producer). It
// exports itself through DLPack (__dlpack__, __dlpack_device__), so
// torch.from_dlpack(y), cupy.from_dlpack(y) and jax.dlpack.from_dlpack(y)
// take it without a copy; the memory lives until every holder lets go.
#pragma once

#include <cstdint>
#include <memory>

#include <cuda_runtime_api.h>
#include <pybind11/pybind11.h>

#include "dlpack_tensor.hpp"

namespace fftconv::python {

class device_array {
public:
    // Allocates shape's elements on `device`; `stream` is where the array
    // will be written (exports to another stream wait for it).
    device_array(const shape4& shape, int device, std::uintptr_t stream);

    const shape4& shape() const noexcept { return shape_; }
    int device() const noexcept { return device_; }
    float* data() const noexcept { return static_cast<float*>(memory_.get()); }
    // The stream the array was last written on.
    void set_stream(std::uintptr_t stream) noexcept { stream_ = stream; }

    // The DLPack protocol. `consumer_stream`: None or 1 (the legacy default
    // stream), 2 (per-thread default), -1 (no ordering wanted), or a
    // cudaStream_t as an integer; work on it is ordered after the writes.
    pybind11::capsule dlpack(const pybind11::object& consumer_stream) const;
    pybind11::tuple dlpack_device() const;

private:
    shape4 shape_;
    int device_;
    std::uintptr_t stream_;
    std::shared_ptr<void> memory_;  // shared with every exported DLPack tensor
};

}  // namespace fftconv::python
