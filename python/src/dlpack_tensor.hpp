// python/src/dlpack_tensor.hpp — reading a tensor handed over through DLPack
// (a "dltensor" capsule from x.__dlpack__()) and checking that fftconv can
// use it as it is: CUDA memory, its dtype (float32; x and y of conv2d, dy
// and dx of conv2d_backward_data also bfloat16 or float16:
// fftconv/element_type.hpp), dense (NCHW for x, w and y; a vector for the
// bias), the expected shape.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include <pybind11/pybind11.h>

#include "fftconv/element_type.hpp"

// Debian's libdlpack-dev and most installs provide <dlpack/dlpack.h>;
// PyTorch ships the same header as <ATen/dlpack.h> (python/meson.build
// picks). Only the pre-1.0 ABI (DLManagedTensor) is used, which every
// DLPack version keeps.
#ifdef FFTCONV_DLPACK_FROM_ATEN
#include <ATen/dlpack.h>
#else
#include <dlpack/dlpack.h>
#endif

namespace fftconv::python {

using shape4 = std::array<std::int64_t, 4>;

// "[2, 3, 64, 64]", "[8]"
std::string to_string(std::span<const std::int64_t> shape);
inline std::string to_string(const shape4& shape) { return to_string(std::span<const std::int64_t>(shape)); }

// The DLTensor inside an unconsumed "dltensor" capsule. The capsule keeps
// ownership (its destructor calls the producer's deleter), so the view is
// valid while the capsule is alive. Throws fftconv::error(invalid_argument)
// naming `name` when the capsule is not a DLPack tensor or was consumed.
const DLTensor& dlpack_tensor(const pybind11::capsule& capsule, const char* name);

// The tensor's float data, after checking that it is a float32 CUDA tensor
// of shape `expected` on device `device`, dense in row-major order (NCHW
// for a 4-dimensional `expected`; the bias is 1-dimensional).
// Throws fftconv::error(invalid_argument) naming `name` and what is wrong.
float* checked_float_data(const DLTensor& tensor, const char* name, std::span<const std::int64_t> expected,
                          int device);
inline float* checked_float_data(const DLTensor& tensor, const char* name, const shape4& expected, int device) {
    return checked_float_data(tensor, name, std::span<const std::int64_t>(expected), device);
}

// An activation's data (x and y of conv2d, dy and dx of
// conv2d_backward_data) and its element type.
struct activation_data {
    void* data;
    element_type type;
};

// The first activation of a call (x, dy): the checks of checked_float_data,
// with float32, bfloat16 or float16 elements (DLPack kDLFloat 32, kDLBfloat
// 16, kDLFloat 16), aligned to its element size.
activation_data checked_activation(const DLTensor& tensor, const char* name, const shape4& expected, int device);

// The second activation of a call (y, dx), which must have the first's
// element type `type` (the first is named `first_name` in the message when it
// has not).
void* checked_activation_like(const DLTensor& tensor, const char* name, const shape4& expected, int device,
                              element_type type, const char* first_name);

// The DLPack dtype of an element type, and the element type of a dtype name
// ("float32", "bfloat16", "float16"; throws invalid_argument naming `name`
// otherwise).
DLDataType dlpack_dtype(element_type type);
element_type element_type_named(const std::string& dtype, const char* name);

// "float32", "bfloat16", "int64", "float32x4" (lanes).
std::string dtype_name(const DLDataType& dtype);

// The CUDA device a tensor lives on; throws if it is not CUDA memory.
int cuda_device_of(const DLTensor& tensor, const char* name);

}  // namespace fftconv::python
