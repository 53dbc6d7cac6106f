// python/src/module.cpp — fftconv._native: the C++ API for Python. The
// public API is the Python package (python/fftconv), which finds each
// tensor's device and stream and hands tensors over as DLPack capsules;
// this module checks every capsule against the problem and calls fftconv.
//
// Activations (x and y of conv2d, dy and dx of conv2d_backward_data) are
// float32, bfloat16 or float16, both of a call the same; their element type
// picks the instantiation of the context's template. Filters, biases and
// conv2d_backward_filter's operands are float32 (fftconv/element_type.hpp).
//
// fftconv::error becomes the Python exception class of its status
// (fftconv._errors), carrying fftconv's message unchanged.
//
// Problem reads kernel and padding as PyTorch's conv2d does: one int (both
// extents) or a (height, width) pair; padding also 'valid' (0) and 'same'
// ((k - 1) / 2 for an odd kernel extent k; an even one is refused, since
// 'same' would need one zero more on one side than on the other).
#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "context_cache.hpp"
#include "device_array.hpp"
#include "dlpack_tensor.hpp"
#include "fftconv/fftconv.hpp"

namespace py = pybind11;
using namespace fftconv;
using namespace fftconv::python;

namespace {

shape4 input_shape(const problem& p) { return {p.batch, p.in_channels, p.height, p.width}; }
// w is [out_channels, in_channels / groups, kernel.height, kernel.width]. A
// groups that does not divide in_channels gives in_channels / groups rounded
// down here; validate() refuses such a problem before any tensor is checked.
shape4 filter_shape(const problem& p) {
    return {p.out_channels, p.groups > 0 ? p.group_in_channels() : p.in_channels, p.kernel.height, p.kernel.width};
}
shape4 output_shape(const problem& p) { return {p.batch, p.out_channels, p.out_height(), p.out_width()}; }

[[noreturn]] void invalid(const std::string& message) {
    throw error(status::invalid_argument, "fftconv: " + message);
}

std::string python_repr(const py::handle& value) { return py::repr(value).cast<std::string>(); }

// An int, or anything with __index__ (NumPy and PyTorch integers); a bool,
// float or str is refused (TypeError), as PyTorch's conv2d refuses them.
std::int64_t as_int(const py::handle& value, const char* name) {
    if (PyBool_Check(value.ptr()) || !PyIndex_Check(value.ptr()))
        throw py::type_error(std::string("fftconv: ") + name + " must be an int, not " +
                             Py_TYPE(value.ptr())->tp_name + " (" + python_repr(value) + ")");
    const auto index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long result = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (overflow != 0) invalid(std::string(name) + " = " + python_repr(value) + " does not fit 64 bits");
    return result;
}

// One int (both extents) or a (height, width) pair.
extent2d as_extent(const py::handle& value, const char* name) {
    if (PyIndex_Check(value.ptr()) && !PyBool_Check(value.ptr())) return extent2d{as_int(value, name)};
    if (py::isinstance<py::sequence>(value) && !py::isinstance<py::str>(value) && !py::isinstance<py::bytes>(value)) {
        const auto items = py::reinterpret_borrow<py::sequence>(value);
        if (items.size() != 2)
            invalid(std::string(name) + " = " + python_repr(value) + " has " + std::to_string(items.size()) +
                    " values; expected one int or a (height, width) pair");
        const std::string height = std::string(name) + "[0]", width = std::string(name) + "[1]";
        return {as_int(items[0], height.c_str()), as_int(items[1], width.c_str())};
    }
    throw py::type_error(std::string("fftconv: ") + name + " must be an int or a (height, width) pair, not " +
                         Py_TYPE(value.ptr())->tp_name + " (" + python_repr(value) + ")");
}

// PyTorch's padding='same' for `kernel`, when symmetric padding can say it:
// (k - 1) / 2 on each side of an odd extent k. An even extent needs
// (k - 1) / 2 zeros before and one more after (PyTorch pads the extra zero
// at the bottom and right), which one padding per axis cannot express.
extent2d same_padding_for(const extent2d& kernel) {
    const auto before = [](std::int64_t k) { return (k - 1) / 2; };
    const auto after = [](std::int64_t k) { return k - 1 - (k - 1) / 2; };
    for (const auto& [extent, axis, first, second] :
         {std::tuple{kernel.height, "height", "above", "below"}, std::tuple{kernel.width, "width", "on the left", "on the right"}}) {
        if (extent >= 1 && extent % 2 == 0)
            invalid("padding='same' with the even kernel " + std::string(axis) + " " + std::to_string(extent) +
                    " needs padding " + std::to_string(before(extent)) + " " + first + " and " +
                    std::to_string(after(extent)) + " " + second +
                    " (PyTorch puts the extra zero below and on the right); fftconv pads both sides of an axis "
                    "alike and cannot express that: pad x yourself, e.g. torch.nn.functional.pad(x, (" +
                    std::to_string(before(kernel.width)) + ", " + std::to_string(after(kernel.width)) + ", " +
                    std::to_string(before(kernel.height)) + ", " + std::to_string(after(kernel.height)) +
                    ")), and pass padding=0");
    }
    return same_padding(kernel);
}

// An int, a (height, width) pair, 'valid' (no padding) or 'same' (for `kernel`).
extent2d as_padding(const py::handle& value, const extent2d& kernel) {
    if (py::isinstance<py::str>(value)) {
        const auto mode = value.cast<std::string>();
        if (mode == "valid") return extent2d{0};
        if (mode == "same") return same_padding_for(kernel);
        invalid("padding = " + python_repr(value) +
                ": expected an int, a (height, width) pair, 'same' or 'valid'");
    }
    return as_extent(value, "padding");
}

py::tuple as_tuple(const extent2d& e) { return py::make_tuple(e.height, e.width); }

// A tile geometry's kernel (height, width) and its outputs per tile (rows, columns).
py::tuple geometry_kernel(const tile_geometry<>& g) { return py::make_tuple(g.kernel_height(), g.kernel_width()); }
py::tuple geometry_out_tile(const tile_geometry<>& g) {
    return py::make_tuple(g.out_tile_height(), g.out_tile_width());
}
std::string extent_string(const py::tuple& extent) {
    return std::to_string(extent[0].cast<int>()) + "x" + std::to_string(extent[1].cast<int>());
}

// f(std::type_identity<E>{}) for the C++ type E of `type`: float,
// __nv_bfloat16 or __half.
template <class F>
void with_element_type(element_type type, F&& f) {
    switch (type) {
        case element_type::float32: f(std::type_identity<float>{}); return;
        case element_type::bfloat16: f(std::type_identity<__nv_bfloat16>{}); return;
        case element_type::float16: f(std::type_identity<__half>{}); return;
    }
    throw error(status::internal_error, "fftconv: an element type out of range");
}

// Whether this thread is inside with_contexts (then in a workspace
// allocator's callback, if it is calling again).
thread_local bool in_contexts = false;

// f(contexts()), under the locking rule of context_cache.hpp: without the
// GIL, holding the cache's mutex. f must touch no Python object (the
// callers read every argument first and copy the problem, which another
// thread could change), and returns no reference into the cache.
template <class F>
decltype(auto) with_contexts(F&& f) {
    if (in_contexts)
        throw error(status::invalid_argument,
                    "fftconv: called from inside fftconv's own workspace allocator callback; the allocator "
                    "must not call fftconv");
    py::gil_scoped_release no_gil;
    const auto lock = contexts().lock();
    in_contexts = true;
    struct leave {
        ~leave() { in_contexts = false; }
    } on_exit;
    return f(contexts());
}

// A filter spectrum with the device and the problem it was made for.
struct python_filter_spectrum {
    filter_spectrum spectrum;
    int device;
    problem made_for;
};

// The data of the output, which is either a DLPack capsule or an array
// fftconv allocated (device_array), of x's element type `type`; for None a
// new device_array of that type, which `y` then holds.
void* output_data(py::object& y, const problem& p, int device, std::uintptr_t stream, element_type type) {
    if (y.is_none()) y = py::cast(device_array(output_shape(p), device, stream, type));
    if (py::isinstance<device_array>(y)) {
        auto& array = y.cast<device_array&>();
        if (array.shape() != output_shape(p))
            throw error(status::invalid_argument, "fftconv: out has shape " + to_string(array.shape()) +
                                                      "; expected " + to_string(output_shape(p)));
        if (array.device() != device)
            throw error(status::invalid_argument, "fftconv: out is on CUDA device " +
                                                      std::to_string(array.device()) +
                                                      " but the input x is on CUDA device " +
                                                      std::to_string(device));
        if (array.type() != type)
            throw error(status::invalid_argument, std::string("fftconv: out has dtype ") + to_string(array.type()) +
                                                      " but x has dtype " + to_string(type) +
                                                      ": fftconv writes out in x's dtype (float32, bfloat16 "
                                                      "or float16, the two the same)");
        array.set_stream(stream);
        return array.data();
    }
    return checked_activation_like(dlpack_tensor(y.cast<py::capsule>(), "out"), "out", output_shape(p), device, type,
                                   "x");
}

// The bias's data: null for None, else a DLPack capsule of out_channels floats.
const float* bias_data(const py::object& bias, const problem& p, int device) {
    if (bias.is_none()) return nullptr;
    if (!py::isinstance<py::capsule>(bias))
        invalid("bias is a " + std::string(Py_TYPE(bias.ptr())->tp_name) +
                "; expected None or a DLPack capsule of out_channels floats");
    const std::array<std::int64_t, 1> expected{p.out_channels};
    return checked_float_data(dlpack_tensor(bias.cast<py::capsule>(), "bias"), "bias", expected, device);
}

// y = conv2d(x, w) + bias (bias: None or a capsule); y: a capsule, a
// DeviceArray, or None for a new DeviceArray of x's dtype. Returns y.
py::object conv2d(const problem p, const py::capsule& x, const py::capsule& w, const py::object& bias,
                  py::object y, int device, std::uintptr_t stream) {
    validate(p);
    const activation_data x_data = checked_activation(dlpack_tensor(x, "x"), "x", input_shape(p), device);
    const float* w_data = checked_float_data(dlpack_tensor(w, "w"), "w", filter_shape(p), device);
    const float* b_data = bias_data(bias, p, device);
    void* y_data = output_data(y, p, device, stream, x_data.type);
    device_guard guard(device);
    with_contexts([&](context_cache& cache) {
        context& ctx = cache.get(device, stream);
        with_element_type(x_data.type, [&]<class E>(std::type_identity<E>) {
            ctx.conv2d(p, static_cast<const E*>(x_data.data), w_data, b_data, static_cast<E*>(y_data));
        });
    });
    return y;
}

py::object conv2d_with_spectrum(const problem p, const py::capsule& x, const python_filter_spectrum& w,
                                const py::object& bias, py::object y, int device, std::uintptr_t stream) {
    validate(p);
    if (w.device != device)
        throw error(status::invalid_argument, "fftconv: the filter spectrum is on CUDA device " +
                                                  std::to_string(w.device) + " but the input x is on CUDA device " +
                                                  std::to_string(device));
    const activation_data x_data = checked_activation(dlpack_tensor(x, "x"), "x", input_shape(p), device);
    const float* b_data = bias_data(bias, p, device);
    void* y_data = output_data(y, p, device, stream, x_data.type);
    device_guard guard(device);
    with_contexts([&](context_cache& cache) {
        context& ctx = cache.get(device, stream);
        with_element_type(x_data.type, [&]<class E>(std::type_identity<E>) {
            ctx.conv2d(p, static_cast<const E*>(x_data.data), w.spectrum, b_data, static_cast<E*>(y_data));
        });
    });
    return y;
}

python_filter_spectrum transform_filter(const problem p, const py::capsule& w, int device, std::uintptr_t stream) {
    validate(p);
    const float* w_data = checked_float_data(dlpack_tensor(w, "w"), "w", filter_shape(p), device);
    device_guard guard(device);
    return with_contexts([&](context_cache& cache) {
        return python_filter_spectrum{cache.get(device, stream).transform_filter(p, w_data), device, p};
    });
}

// The gradients (context::conv2d_backward_data / _filter) into given dense
// tensors (DLPack capsules); dbias: None or a capsule of out_channels floats.
// dy and dx: float32, bfloat16 or float16 (the two the same); the filter
// gradient's operands: float32.
void conv2d_backward_data(const problem p, const py::capsule& dy, const py::capsule& w, const py::capsule& dx,
                          int device, std::uintptr_t stream) {
    validate(p);
    const activation_data dy_data = checked_activation(dlpack_tensor(dy, "dy"), "dy", output_shape(p), device);
    const float* w_data = checked_float_data(dlpack_tensor(w, "w"), "w", filter_shape(p), device);
    void* dx_data = checked_activation_like(dlpack_tensor(dx, "dx"), "dx", input_shape(p), device, dy_data.type, "dy");
    device_guard guard(device);
    with_contexts([&](context_cache& cache) {
        context& ctx = cache.get(device, stream);
        with_element_type(dy_data.type, [&]<class E>(std::type_identity<E>) {
            ctx.conv2d_backward_data(p, static_cast<const E*>(dy_data.data), w_data, static_cast<E*>(dx_data));
        });
    });
}

void conv2d_backward_filter(const problem p, const py::capsule& x, const py::capsule& dy, const py::capsule& dw,
                            const py::object& dbias, int device, std::uintptr_t stream) {
    validate(p);
    const float* x_data = checked_float_data(dlpack_tensor(x, "x"), "x", input_shape(p), device);
    const float* dy_data = checked_float_data(dlpack_tensor(dy, "dy"), "dy", output_shape(p), device);
    float* dw_data = checked_float_data(dlpack_tensor(dw, "dw"), "dw", filter_shape(p), device);
    float* db_data = const_cast<float*>(bias_data(dbias, p, device));  // the bias's checks; written here
    device_guard guard(device);
    with_contexts([&](context_cache& cache) {
        cache.get(device, stream).conv2d_backward_filter(p, x_data, dy_data, dw_data, db_data);
    });
}

void reserve(const problem p, int device, std::uintptr_t stream, bool backward) {
    validate(p);
    device_guard guard(device);
    with_contexts([&](context_cache& cache) {
        context& ctx = cache.get(device, stream);
        if (backward)
            ctx.reserve_backward(p);
        else
            ctx.reserve(p);
    });
}

#ifdef FFTCONV_PYTHON_HAS_ALLOCATOR
// A workspace allocator that calls back into Python: allocate(bytes, stream)
// -> pointer as an int (0 on failure), deallocate(pointer, bytes, stream).
// The module installs PyTorch's caching allocator through it
// (fftconv/torch.py). Callbacks take the GIL (they run under the cache's
// mutex, without it: with_contexts); they run only when a context grows or
// frees its workspace. Never freed: a context may call back as long as it
// lives.
struct python_allocator {
    py::object allocate;
    py::object deallocate;
};

void* python_allocate(void* state, std::size_t bytes, cudaStream_t stream) {
    py::gil_scoped_acquire gil;
    try {
        const auto result = static_cast<python_allocator*>(state)->allocate(bytes, reinterpret_cast<std::uintptr_t>(stream));
        return reinterpret_cast<void*>(result.cast<std::uintptr_t>());
    } catch (py::error_already_set&) {
        // The context reports out_of_memory with the byte count; Python's
        // own exception (torch.OutOfMemoryError) is dropped with `e`.
        return nullptr;
    } catch (...) {
        return nullptr;
    }
}

void python_deallocate(void* state, void* pointer, std::size_t bytes, cudaStream_t stream) {
    py::gil_scoped_acquire gil;
    try {
        static_cast<python_allocator*>(state)->deallocate(reinterpret_cast<std::uintptr_t>(pointer), bytes,
                                                          reinterpret_cast<std::uintptr_t>(stream));
    } catch (py::error_already_set& e) {
        e.discard_as_unraisable("fftconv workspace deallocation");
    } catch (...) {
    }
}

void set_allocator(int device, const py::object& allocate, const py::object& deallocate) {
    device_guard guard(device);
    if (allocate.is_none() != deallocate.is_none())
        invalid("set_allocator: pass both allocate and deallocate, or neither (cudaMalloc)");
    workspace_allocator allocator{};
    if (!allocate.is_none()) {
        auto* state = new python_allocator{allocate, deallocate};  // see python_allocator
        allocator.allocate = &python_allocate;
        allocator.deallocate = &python_deallocate;
        allocator.state = state;
    }
    with_contexts([&](context_cache& cache) { cache.set_allocator(device, allocator); });
}
#endif

std::size_t workspace_size(const problem p, int device) {
    validate(p);
    device_guard guard(device);
    return with_contexts([&](context_cache& cache) { return cache.get(device, 0).workspace_size(p); });
}

}  // namespace

PYBIND11_MODULE(_native, m) {
    m.doc() = "fftconv's C++ API (internal: use the fftconv package)";

    // fftconv::error -> fftconv._errors.error_class(status)(message, status, code)
    py::object errors = py::module_::import("fftconv._errors");
    // Never destroyed: a static py::object would be released after the
    // interpreter is gone.
    static auto* error_factory = new py::object(errors.attr("from_native"));
    py::register_exception_translator([](std::exception_ptr thrown) {
        try {
            if (thrown) std::rethrow_exception(thrown);
        } catch (const error& e) {
            py::object instance = (*error_factory)(e.what(), to_string(e.code()), int(e.code()));
            PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(instance.ptr())), instance.ptr());
        }
    });

    py::class_<problem>(m, "Problem",
                        "One conv2d call's extents (fftconv/problem.hpp): torch.nn.functional.conv2d(x, w, bias,\n"
                        "stride=1, padding=padding, groups=groups) with x [batch, in_channels, height, width]\n"
                        "and w [out_channels, in_channels / groups, kernel height, kernel width].\n\n"
                        "kernel: an int (square) or (height, width). padding: zeros on each side, an int,\n"
                        "(height, width), 'valid' (0) or 'same' ((k - 1) // 2 for odd kernel extents;\n"
                        "even ones raise InvalidArgumentError, a ValueError). stride and dilation must be\n"
                        "1 (validate() names them otherwise). Not validated until validate() or a call.")
        .def(py::init([](std::int64_t batch, std::int64_t in_channels, std::int64_t out_channels,
                         std::int64_t height, std::int64_t width, const py::object& kernel, const py::object& padding,
                         std::int64_t groups, std::int64_t stride, std::int64_t dilation) {
                 problem p;
                 p.batch = batch;
                 p.in_channels = in_channels;
                 p.out_channels = out_channels;
                 p.height = height;
                 p.width = width;
                 p.kernel = as_extent(kernel, "kernel");
                 p.padding = as_padding(padding, p.kernel);
                 p.groups = groups;
                 p.stride = stride;
                 p.dilation = dilation;
                 return p;
             }),
             py::arg("batch"), py::arg("in_channels"), py::arg("out_channels"), py::arg("height"),
             py::arg("width"), py::arg("kernel"), py::arg("padding") = 0, py::arg("groups") = 1,
             py::arg("stride") = 1, py::arg("dilation") = 1)
        .def_readwrite("batch", &problem::batch)
        .def_readwrite("in_channels", &problem::in_channels)
        .def_readwrite("out_channels", &problem::out_channels)
        .def_readwrite("height", &problem::height)
        .def_readwrite("width", &problem::width)
        .def_property("kernel", [](const problem& p) { return as_tuple(p.kernel); },
                      [](problem& p, const py::object& kernel) { p.kernel = as_extent(kernel, "kernel"); },
                      "(height, width); set an int or a pair. Setting it leaves padding as it is.")
        .def_property("padding", [](const problem& p) { return as_tuple(p.padding); },
                      [](problem& p, const py::object& padding) { p.padding = as_padding(padding, p.kernel); },
                      "(height, width) zeros on each side; set an int, a pair, 'valid' or 'same' (for the "
                      "current kernel).")
        .def_readwrite("groups", &problem::groups)
        .def_readwrite("stride", &problem::stride, "Must be 1.")
        .def_readwrite("dilation", &problem::dilation, "Must be 1.")
        .def_property_readonly("out_height", &problem::out_height)
        .def_property_readonly("out_width", &problem::out_width)
        .def_property_readonly("input_shape", [](const problem& p) { return input_shape(p); },
                               "x: [batch, in_channels, height, width]")
        .def_property_readonly("filter_shape", [](const problem& p) { return filter_shape(p); },
                               "w: [out_channels, in_channels / groups, kernel height, kernel width]")
        .def_property_readonly("output_shape", [](const problem& p) { return output_shape(p); },
                               "y: [batch, out_channels, out_height, out_width]")
        .def("validate", [](const problem& p) { validate(p); },
             "Raises InvalidArgumentError naming the first field out of range.")
        // is_operator: another type (None, a tuple) gives NotImplemented, so == is False and != True.
        .def("__eq__", [](const problem& a, const problem& b) { return a == b; }, py::is_operator())
        .def("__repr__", [](const problem& p) { return "fftconv.Problem(" + to_string(p) + ")"; });

    py::class_<dispatch_decision>(m, "Plan", "Which path a problem takes (fftconv/dispatch.hpp).")
        .def_property_readonly("path", [](const dispatch_decision& d) { return std::string(to_string(d.path)); })
        .def_property_readonly("tile_extent", [](const dispatch_decision& d) { return d.geometry.tile_extent(); })
        .def_property_readonly("kernel", [](const dispatch_decision& d) { return geometry_kernel(d.geometry); },
                               "(height, width) of the kernel.")
        .def_property_readonly("out_tile", [](const dispatch_decision& d) { return geometry_out_tile(d.geometry); },
                               "Outputs per tile (rows, columns) of overlap-save: tile_extent - kernel + 1 "
                               "(along an axis where one tile covers the padded image, it yields every output).")
        .def_property_readonly("in_channels", [](const dispatch_decision& d) { return d.geometry.in_channels(); })
        .def_property_readonly("out_channels", [](const dispatch_decision& d) { return d.geometry.out_channels(); })
        .def("__repr__", [](const dispatch_decision& d) {
            return std::string("fftconv.Plan(path='") + to_string(d.path) +
                   "', tile_extent=" + std::to_string(d.geometry.tile_extent()) + ")";
        });

    m.def("plan", [](const problem& p) { return choose_dispatch(p); }, py::arg("problem"),
          "The path and tile extent for `problem` (validated). Needs no GPU.");
    m.def("compiled_configs", [] {
        py::list configs;
        for (const tile_config& c : compiled_configs())
            configs.append(py::make_tuple(c.kernel_extent, c.channels, c.tile_extent, c.depthwise));
        return configs;
    }, "The compiled configurations (kernel_extent, channels, tile_extent, depthwise), in table order.");
    m.def("device_count", &device_count, "Visible CUDA devices (0 when none can be used).");
    m.def("require_device", &require_device, py::arg("device"),
          "Raises CudaError saying why when `device` cannot be used.");
    m.def("workspace_size", &workspace_size, py::arg("problem"), py::arg("device"));
    m.def("conv2d", &conv2d, py::arg("problem"), py::arg("x"), py::arg("w"), py::arg("bias").none(true),
          py::arg("out").none(true), py::arg("device"), py::arg("stream"),
          "out = conv2d(x, w) + bias; x, w, bias (or None) and out are DLPack capsules (out may be a DeviceArray,\n"
          "or None for a new DeviceArray of x's dtype); returns out. x and out: float32, bfloat16 or float16, the\n"
          "two the same; w and bias: float32.");
    m.def("conv2d_with_spectrum", &conv2d_with_spectrum, py::arg("problem"), py::arg("x"), py::arg("w"),
          py::arg("bias").none(true), py::arg("out").none(true), py::arg("device"), py::arg("stream"));
    m.def("conv2d_backward_data", &conv2d_backward_data, py::arg("problem"), py::arg("dy"), py::arg("w"),
          py::arg("dx"), py::arg("device"), py::arg("stream"));
    m.def("conv2d_backward_filter", &conv2d_backward_filter, py::arg("problem"), py::arg("x"), py::arg("dy"),
          py::arg("dw"), py::arg("dbias").none(true), py::arg("device"), py::arg("stream"));
    m.def("transform_filter", &transform_filter, py::arg("problem"), py::arg("w"), py::arg("device"),
          py::arg("stream"));
    m.def("reserve", &reserve, py::arg("problem"), py::arg("device"), py::arg("stream"), py::arg("backward") = false,
          "Makes the cuFFT plans and grows the workspace of the (device, stream) context for `problem` now "
          "(backward: the two gradients' too), so that calls on it allocate nothing (CUDA graphs).");
    m.def("set_workspace_limit",
          [](int device, std::size_t bytes) {
              with_contexts([&](context_cache& cache) { cache.set_workspace_limit(device, bytes); });
          },
          py::arg("device"), py::arg("bytes"));
    m.def("workspace_limit",
          [](int device) { return with_contexts([&](context_cache& cache) { return cache.workspace_limit(device); }); },
          py::arg("device"));
    m.def("release", [](int device) { with_contexts([&](context_cache& cache) { cache.release(device); }); },
          py::arg("device") = -1,
          "release() on every cached context of `device` (-1: all): waits, frees workspaces and cuFFT plans.");
    m.def("has_context",
          [](int device, std::uintptr_t stream) {
              return with_contexts([&](context_cache& cache) { return cache.contains(device, stream); });
          },
          py::arg("device"), py::arg("stream"));
    m.def("borrowable_stream",
          [](int device) { return with_contexts([&](context_cache& cache) { return cache.borrowable_stream(device); }); },
          py::arg("device"));
    m.def("is_capturing", &is_capturing, py::arg("stream"));
    m.def("cached_streams",
          [](int device) { return with_contexts([&](context_cache& cache) { return cache.streams(device); }); },
          py::arg("device"),
          "(stream, being captured, pinned) of each cached context of `device`, least recently used first.");
    m.def("context_cache_capacity", [] { return with_contexts([](context_cache& cache) { return cache.capacity(); }); });
    m.def("set_context_cache_capacity",
          [](std::size_t n) { with_contexts([&](context_cache& cache) { cache.set_capacity(n); }); },
          py::arg("contexts"));
    m.def("pinned_contexts",
          [](int device) { return with_contexts([&](context_cache& cache) { return cache.pinned(device); }); },
          py::arg("device"));
#ifdef FFTCONV_PYTHON_HAS_ALLOCATOR
    m.def("set_allocator", &set_allocator, py::arg("device"), py::arg("allocate").none(true),
          py::arg("deallocate").none(true));
    m.attr("has_allocator") = true;
#else
    m.attr("has_allocator") = false;
#endif
    m.def("renew_contexts_after_fork", &renew_contexts_after_fork,
          "In a forked child: a fresh context cache (the parent's may be locked by a thread the child lacks).");
    m.def("clear_cache", [] { with_contexts([](context_cache& cache) { cache.clear(); }); },
          "Frees every cached context (workspaces, cuFFT plans). Work in flight must be finished.");
    m.def("cached_contexts",
          [](int device) {
              return with_contexts(
                  [&](context_cache& cache) { return device < 0 ? cache.size() : cache.size(device); });
          },
          py::arg("device") = -1);

    py::class_<python_filter_spectrum>(m, "FilterSpectrum",
                                       "A filter already transformed (inference): pass it as w to conv2d.")
        .def_property_readonly("in_channels", [](const python_filter_spectrum& s) { return s.spectrum.in_channels(); })
        .def_property_readonly("out_channels", [](const python_filter_spectrum& s) { return s.spectrum.out_channels(); })
        .def_property_readonly("kernel", [](const python_filter_spectrum& s) { return geometry_kernel(s.spectrum.geometry()); },
                               "(height, width) of the filter it was made from.")
        .def_property_readonly("groups", [](const python_filter_spectrum& s) { return s.made_for.groups; })
        .def_property_readonly("tile_extent", [](const python_filter_spectrum& s) { return s.spectrum.geometry().tile_extent(); })
        .def_property_readonly("nbytes", [](const python_filter_spectrum& s) { return s.spectrum.bytes(); })
        .def_property_readonly("device", [](const python_filter_spectrum& s) { return s.device; })
        .def_property_readonly("problem", [](const python_filter_spectrum& s) { return s.made_for; })
        .def("__repr__", [](const python_filter_spectrum& s) {
            return "fftconv.FilterSpectrum(out_channels=" + std::to_string(s.spectrum.out_channels()) +
                   ", in_channels=" + std::to_string(s.spectrum.in_channels()) +
                   ", kernel=" + extent_string(geometry_kernel(s.spectrum.geometry())) +
                   (s.made_for.groups != 1 ? ", groups=" + std::to_string(s.made_for.groups) : std::string()) +
                   ", tile_extent=" + std::to_string(s.spectrum.geometry().tile_extent()) +
                   ", device=" + std::to_string(s.device) + ")";
        });

    py::class_<device_array>(m, "DeviceArray",
                             "A CUDA array fftconv allocated (dtype 'float32', 'bfloat16' or 'float16'); export it "
                             "with torch.from_dlpack, cupy.from_dlpack or jax.dlpack.from_dlpack.")
        .def(py::init([](const shape4& shape, int device, std::uintptr_t stream, const std::string& dtype) {
                 const element_type type = element_type_named(dtype, "dtype");  // before any device work
                 return device_array(shape, device, stream, type);
             }),
             py::arg("shape"), py::arg("device"), py::arg("stream") = 0, py::arg("dtype") = "float32")
        .def_property_readonly("shape", [](const device_array& a) { return a.shape(); })
        .def_property_readonly("device", &device_array::device)
        .def_property_readonly("dtype", [](const device_array& a) { return std::string(to_string(a.type())); })
        .def("__dlpack__",
             [](const device_array& a, const py::object& stream, const py::object&, const py::object& dl_device,
                const py::object& copy) {
                 // Only the array's own device, without a copy, can be exported.
                 if (!copy.is_none() && copy.cast<bool>())
                     throw py::buffer_error("fftconv.DeviceArray cannot export a copy (copy=True)");
                 if (!dl_device.is_none() && !dl_device.equal(a.dlpack_device()))
                     throw py::buffer_error("fftconv.DeviceArray lives on CUDA device " +
                                            std::to_string(a.device()) + " and cannot move");
                 return a.dlpack(stream);
             },
             py::kw_only(), py::arg("stream") = py::none(),
             py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
        .def("__dlpack_device__", &device_array::dlpack_device)
        .def("__repr__", [](const device_array& a) {
            return "fftconv.DeviceArray(shape=" + to_string(a.shape()) + ", device=" + std::to_string(a.device()) +
                   (a.type() != element_type::float32 ? std::string(", dtype=") + to_string(a.type()) : std::string()) +
                   ")";
        });
}
