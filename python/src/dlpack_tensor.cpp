#include "dlpack_tensor.hpp"

#include <algorithm>
#include <sstream>

#include "fftconv/status.hpp"

namespace fftconv::python {
namespace {

[[noreturn]] void invalid(const std::string& message) {
    throw error(status::invalid_argument, "fftconv: " + message);
}

const char* device_name(int type) {
    switch (type) {
        case kDLCPU: return "CPU";
        case kDLCUDA: return "CUDA";
        case kDLCUDAHost: return "CUDA pinned host";
        case kDLCUDAManaged: return "CUDA managed";
        case kDLROCM: return "ROCm";
        case kDLROCMHost: return "ROCm pinned host";
        case kDLOpenCL: return "OpenCL";
        case kDLVulkan: return "Vulkan";
        case kDLMetal: return "Metal";
        default: return "non-CUDA";
    }
}

bool is_cuda_memory(int type) { return type == kDLCUDA || type == kDLCUDAManaged; }

}  // namespace

std::string to_string(std::span<const std::int64_t> shape) {
    std::ostringstream out;
    out << "[";
    for (std::size_t d = 0; d < shape.size(); ++d) out << (d ? ", " : "") << shape[d];
    out << "]";
    return out.str();
}

const DLTensor& dlpack_tensor(const pybind11::capsule& capsule, const char* name) {
    if (PyCapsule_IsValid(capsule.ptr(), "dltensor") == 0) {
        PyErr_Clear();
        invalid(std::string(name) + " is not an unconsumed DLPack capsule (named \"dltensor\"); "
                "pass the tensor itself, or a fresh tensor.__dlpack__()");
    }
    auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
    if (managed == nullptr) {
        PyErr_Clear();
        invalid(std::string(name) + ": the DLPack capsule holds a null tensor");
    }
    return managed->dl_tensor;
}

int cuda_device_of(const DLTensor& tensor, const char* name) {
    if (!is_cuda_memory(tensor.device.device_type))
        invalid(std::string(name) + " is in " + device_name(tensor.device.device_type) +
                " memory (DLPack device type " + std::to_string(tensor.device.device_type) +
                "); fftconv needs CUDA device memory");
    return tensor.device.device_id;
}

namespace {

// The element type of an activation dtype; false when it is none.
bool activation_type_of(const DLDataType& t, element_type& type) {
    if (t.lanes != 1) return false;
    if (t.code == kDLFloat && t.bits == 32) type = element_type::float32;
    else if (t.code == kDLBfloat && t.bits == 16) type = element_type::bfloat16;
    else if (t.code == kDLFloat && t.bits == 16) type = element_type::float16;
    else return false;
    return true;
}

// The checks after the device type's and the dtype's: dimensions, shape,
// device, density, alignment to `alignment` bytes. The tensor's data.
void* checked_layout(const DLTensor& tensor, int tensor_device, const char* name,
                     std::span<const std::int64_t> expected, int device, std::size_t alignment) {
    const bool nchw = expected.size() == 4;
    if (tensor.ndim != int(expected.size()))
        invalid(std::string(name) + " has " + std::to_string(tensor.ndim) + " dimensions; " +
                (nchw ? std::string("fftconv takes 4-dimensional NCHW tensors")
                      : "expected shape " + to_string(expected)));
    const std::span<const std::int64_t> shape(tensor.shape, expected.size());
    if (!std::equal(shape.begin(), shape.end(), expected.begin()))
        invalid(std::string(name) + " has shape " + to_string(shape) + "; expected " + to_string(expected));
    if (tensor_device != device)
        invalid(std::string(name) + " is on CUDA device " + std::to_string(tensor_device) +
                " but the input x is on CUDA device " + std::to_string(device) +
                ": every tensor of a call must be on one device");
    // Dense row-major: each stride is the product of the later extents.
    // Extents of 1 may carry any stride (PyTorch gives them arbitrary ones).
    if (tensor.strides != nullptr) {
        std::int64_t dense = 1;
        for (int d = int(shape.size()) - 1; d >= 0; --d) {
            if (shape[d] != 1 && tensor.strides[d] != dense) {
                const std::span<const std::int64_t> strides(tensor.strides, shape.size());
                invalid(std::string(name) + " is not " + (nchw ? "a dense NCHW tensor" : "dense") + " (strides " +
                        to_string(strides) + " elements for shape " + to_string(shape) +
                        "); pass a contiguous copy (x.contiguous(), cupy.ascontiguousarray(x))");
            }
            dense *= shape[d];
        }
    }
    auto* data = static_cast<char*>(tensor.data) + tensor.byte_offset;
    if (reinterpret_cast<std::uintptr_t>(data) % alignment != 0)
        invalid(std::string(name) + " is not aligned to " + std::to_string(alignment) + " bytes");
    return data;
}

}  // namespace

std::string dtype_name(const DLDataType& t) {
    const char* kind = t.code == kDLFloat ? "float" : t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint"
                     : t.code == kDLBfloat ? "bfloat" : "code" ;
    std::string name = kind + std::to_string(t.bits);
    if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
    return name;
}

DLDataType dlpack_dtype(element_type type) {
    switch (type) {
        case element_type::bfloat16: return DLDataType{kDLBfloat, 16, 1};
        case element_type::float16: return DLDataType{kDLFloat, 16, 1};
        case element_type::float32: break;
    }
    return DLDataType{kDLFloat, 32, 1};
}

element_type element_type_named(const std::string& dtype, const char* name) {
    for (const element_type type : {element_type::float32, element_type::bfloat16, element_type::float16})
        if (dtype == to_string(type)) return type;
    invalid(std::string(name) + " = '" + dtype + "': expected 'float32', 'bfloat16' or 'float16'");
}

float* checked_float_data(const DLTensor& tensor, const char* name, std::span<const std::int64_t> expected,
                          int device) {
    const int tensor_device = cuda_device_of(tensor, name);
    if (tensor.dtype.code != kDLFloat || tensor.dtype.bits != 32 || tensor.dtype.lanes != 1) {
        element_type half{};
        if (activation_type_of(tensor.dtype, half))  // bfloat16 or float16
            invalid(std::string(name) + " has dtype " + dtype_name(tensor.dtype) + "; fftconv takes " + name +
                    " in float32 only (bfloat16 and float16 are for x and y of conv2d, dy and dx of "
                    "conv2d_backward_data; filters, biases and the filter gradient's operands are float32): "
                    "convert it first, e.g. " + name + ".float()");
        invalid(std::string(name) + " has dtype " + dtype_name(tensor.dtype) +
                "; fftconv computes in float32 only (convert it first, e.g. x.float())");
    }
    return static_cast<float*>(checked_layout(tensor, tensor_device, name, expected, device, alignof(float)));
}

activation_data checked_activation(const DLTensor& tensor, const char* name, const shape4& expected, int device) {
    const int tensor_device = cuda_device_of(tensor, name);
    element_type type{};
    if (!activation_type_of(tensor.dtype, type))
        invalid(std::string(name) + " has dtype " + dtype_name(tensor.dtype) +
                "; fftconv computes in float32 and takes " + name +
                " as float32, bfloat16 or float16 (convert it first, e.g. " + name + ".float())");
    return {checked_layout(tensor, tensor_device, name, expected, device, element_bytes(type)), type};
}

void* checked_activation_like(const DLTensor& tensor, const char* name, const shape4& expected, int device,
                              element_type type, const char* first_name) {
    const int tensor_device = cuda_device_of(tensor, name);
    element_type own{};
    if (!activation_type_of(tensor.dtype, own) || own != type)
        invalid(std::string(name) + " has dtype " + dtype_name(tensor.dtype) + " but " + first_name +
                " has dtype " + to_string(type) + ": fftconv writes " + name + " in " + first_name +
                "'s dtype (float32, bfloat16 or float16, the two the same)");
    return checked_layout(tensor, tensor_device, name, expected, device, element_bytes(type));
}

}  // namespace fftconv::python
