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

std::string dtype_name(const DLDataType& t) {
    const char* kind = t.code == kDLFloat ? "float" : t.code == kDLInt ? "int" : t.code == kDLUInt ? "uint"
                     : t.code == kDLBfloat ? "bfloat" : "code" ;
    std::string name = kind + std::to_string(t.bits);
    if (t.lanes != 1) name += "x" + std::to_string(t.lanes);
    return name;
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

float* checked_float_data(const DLTensor& tensor, const char* name, std::span<const std::int64_t> expected,
                          int device) {
    const int tensor_device = cuda_device_of(tensor, name);
    const bool nchw = expected.size() == 4;
    if (tensor.dtype.code != kDLFloat || tensor.dtype.bits != 32 || tensor.dtype.lanes != 1)
        invalid(std::string(name) + " has dtype " + dtype_name(tensor.dtype) +
                "; fftconv computes in float32 only (convert it first, e.g. x.float())");
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
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(float) != 0)
        invalid(std::string(name) + " is not aligned to 4 bytes");
    return reinterpret_cast<float*>(data);
}

}  // namespace fftconv::python
