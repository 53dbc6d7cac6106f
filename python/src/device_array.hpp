// python/src/device_array.hpp — an NCHW array in CUDA memory (float32,
// bfloat16 or float16: the output's dtype is the input's) that fftconv
// allocated itself, for results whose inputs came from a framework
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
    // Allocates shape's elements of `type` on `device`; `stream` is where
    // the array will be written (exports to another stream wait for it).
    device_array(const shape4& shape, int device, std::uintptr_t stream,
                 element_type type = element_type::float32);

    const shape4& shape() const noexcept { return shape_; }
    int device() const noexcept { return device_; }
    element_type type() const noexcept { return type_; }
    void* data() const noexcept { return memory_.get(); }
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
    element_type type_;
    std::shared_ptr<void> memory_;  // shared with every exported DLPack tensor
};

}  // namespace fftconv::python
