#include "device_array.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "context_cache.hpp"
#include "fftconv/status.hpp"

namespace fftconv::python {
namespace {

void cuda_try(cudaError_t code, const char* call) {
    if (code != cudaSuccess)
        throw error(code == cudaErrorMemoryAllocation ? status::out_of_memory : status::cuda_error,
                    std::string("fftconv: ") + call + ": " + cudaGetErrorString(code));
}

// What a DLPack export owns: the tensor description and a share of the memory.
struct exported_tensor {
    DLManagedTensor managed{};
    std::int64_t shape[4]{};
    std::shared_ptr<void> memory;
};

// Called by whoever consumed the capsule, possibly without the GIL: it
// touches no Python object.
void delete_exported(DLManagedTensor* managed) {
    delete static_cast<exported_tensor*>(managed->manager_ctx);
}

// A capsule nobody consumed still owns its tensor.
void capsule_destructor(PyObject* capsule) {
    if (PyCapsule_IsValid(capsule, "dltensor") != 0) {
        auto* managed = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
        if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    } else {
        PyErr_Clear();
    }
}

cudaStream_t stream_of(std::uintptr_t handle) { return reinterpret_cast<cudaStream_t>(handle); }

}  // namespace

device_array::device_array(const shape4& shape, int device, std::uintptr_t stream, element_type type)
    : shape_(shape), device_(device), stream_(stream), type_(type) {
    // Checked before any device work. The extents other than 0 must
    // multiply, by the element size too, to at most 2^63 - 1 bytes: then
    // neither the byte count nor a consumer's row-major strides wrap.
    for (auto extent : shape)
        if (extent < 0) throw error(status::invalid_argument, "fftconv: negative extent in " + to_string(shape));
    constexpr auto most = std::numeric_limits<std::int64_t>::max();
    std::int64_t bytes = std::int64_t(element_bytes(type));
    bool empty = false;
    for (auto extent : shape) {
        if (extent == 0) {
            empty = true;
            continue;
        }
        if (bytes > most / extent)
            throw error(status::invalid_argument, "fftconv: an array of shape " + to_string(shape) + " and dtype " +
                                                      to_string(type) + " would take more than 2^63 - 1 bytes");
        bytes *= extent;
    }
    device_guard guard(device);
    void* raw = nullptr;
    cuda_try(cudaMalloc(&raw, empty ? element_bytes(type) : std::size_t(bytes)),
             ("cudaMalloc of the output " + to_string(shape)).c_str());
    memory_ = std::shared_ptr<void>(raw, [device](void* p) {
        int previous = 0;
        const bool switched = cudaGetDevice(&previous) == cudaSuccess && previous != device &&
                              cudaSetDevice(device) == cudaSuccess;
        (void)cudaFree(p);
        if (switched) (void)cudaSetDevice(previous);
    });
}

pybind11::capsule device_array::dlpack(const pybind11::object& consumer_stream) const {
    // Order the consumer's stream after the writes on ours (DLPack's rule:
    // the producer synchronises to the stream the consumer names).
    std::intptr_t requested = 1;
    if (!consumer_stream.is_none()) requested = consumer_stream.cast<std::intptr_t>();
    if (requested != -1) {
        if (requested == 0)
            throw error(status::invalid_argument,
                        "fftconv: __dlpack__(stream=0) is ambiguous in the DLPack protocol; "
                        "use 1 for the legacy default stream or 2 for the per-thread one");
        const cudaStream_t target = requested == 1 ? cudaStreamLegacy
                                  : requested == 2 ? cudaStreamPerThread
                                  : stream_of(std::uintptr_t(requested));
        const cudaStream_t ours = stream_ == 0 ? cudaStreamLegacy : stream_of(stream_);
        if (target != ours) {
            device_guard guard(device_);
            cudaEvent_t written = nullptr;
            cuda_try(cudaEventCreateWithFlags(&written, cudaEventDisableTiming), "cudaEventCreateWithFlags");
            cudaError_t code = cudaEventRecord(written, ours);
            if (code == cudaSuccess) code = cudaStreamWaitEvent(target, written, 0);
            (void)cudaEventDestroy(written);
            cuda_try(code, "ordering the consumer's stream after the output's");
        }
    }
    auto* exported = new exported_tensor;
    exported->memory = memory_;
    for (int d = 0; d < 4; ++d) exported->shape[d] = shape_[d];
    DLTensor& t = exported->managed.dl_tensor;
    t.data = memory_.get();
    t.device = DLDevice{kDLCUDA, device_};
    t.ndim = 4;
    t.dtype = dlpack_dtype(type_);
    t.shape = exported->shape;
    t.strides = nullptr;  // dense row-major
    t.byte_offset = 0;
    exported->managed.manager_ctx = exported;
    exported->managed.deleter = delete_exported;
    PyObject* capsule = PyCapsule_New(&exported->managed, "dltensor", capsule_destructor);
    if (capsule == nullptr) {
        delete exported;
        throw pybind11::error_already_set();
    }
    return pybind11::reinterpret_steal<pybind11::capsule>(capsule);
}

pybind11::tuple device_array::dlpack_device() const {
    return pybind11::make_tuple(int(kDLCUDA), device_);
}

}  // namespace fftconv::python
