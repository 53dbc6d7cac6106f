// python/src/module.cpp — fftconv._native: the C++ API for Python. The
// public API is the Python package (python/fftconv), which finds each
// tensor's device and stream and hands tensors over as DLPack capsules;
// this module checks every capsule against the problem and calls fftconv.
//
// fftconv::error becomes the Python exception class of its status
// (fftconv._errors), carrying fftconv's message unchanged.
#include <cstdint>
#include <string>

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
shape4 filter_shape(const problem& p) {
    return {p.out_channels, p.in_channels, p.kernel.height, p.kernel.height};
}
shape4 output_shape(const problem& p) { return {p.batch, p.out_channels, p.out_height(), p.out_width()}; }

// A filter spectrum with the device and the problem it was made for.
struct python_filter_spectrum {
    filter_spectrum spectrum;
    int device;
    problem made_for;
};

// The data of the output, which is either a DLPack capsule or an array
// fftconv allocated (device_array).
float* output_data(const py::object& y, const problem& p, int device, std::uintptr_t stream) {
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
        array.set_stream(stream);
        return array.data();
    }
    return checked_float_data(dlpack_tensor(y.cast<py::capsule>(), "out"), "out", output_shape(p), device);
}

void conv2d(const problem& p, const py::capsule& x, const py::capsule& w, const py::object& y, int device,
            std::uintptr_t stream) {
    validate(p);
    const float* x_data = checked_float_data(dlpack_tensor(x, "x"), "x", input_shape(p), device);
    const float* w_data = checked_float_data(dlpack_tensor(w, "w"), "w", filter_shape(p), device);
    float* y_data = output_data(y, p, device, stream);
    device_guard guard(device);
    contexts().get(device, stream).conv2d(p, x_data, w_data, y_data);
}

void conv2d_with_spectrum(const problem& p, const py::capsule& x, const python_filter_spectrum& w,
                          const py::object& y, int device, std::uintptr_t stream) {
    validate(p);
    if (w.device != device)
        throw error(status::invalid_argument, "fftconv: the filter spectrum is on CUDA device " +
                                                  std::to_string(w.device) + " but the input x is on CUDA device " +
                                                  std::to_string(device));
    const float* x_data = checked_float_data(dlpack_tensor(x, "x"), "x", input_shape(p), device);
    float* y_data = output_data(y, p, device, stream);
    device_guard guard(device);
    contexts().get(device, stream).conv2d(p, x_data, w.spectrum, y_data);
}

python_filter_spectrum transform_filter(const problem& p, const py::capsule& w, int device, std::uintptr_t stream) {
    validate(p);
    const float* w_data = checked_float_data(dlpack_tensor(w, "w"), "w", filter_shape(p), device);
    device_guard guard(device);
    return python_filter_spectrum{contexts().get(device, stream).transform_filter(p, w_data), device, p};
}

std::size_t workspace_size(const problem& p, int device) {
    validate(p);
    device_guard guard(device);
    return contexts().get(device, 0).workspace_size(p);
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

    py::class_<problem>(m, "Problem", "One conv2d call's extents (fftconv/problem.hpp).")
        .def(py::init([](std::int64_t batch, std::int64_t in_channels, std::int64_t out_channels,
                         std::int64_t height, std::int64_t width, std::int64_t kernel_extent) {
                 return problem{batch, in_channels, out_channels, height, width, kernel_extent};
             }),
             py::arg("batch"), py::arg("in_channels"), py::arg("out_channels"), py::arg("height"),
             py::arg("width"), py::arg("kernel_extent"))
        .def_readwrite("batch", &problem::batch)
        .def_readwrite("in_channels", &problem::in_channels)
        .def_readwrite("out_channels", &problem::out_channels)
        .def_readwrite("height", &problem::height)
        .def_readwrite("width", &problem::width)
        .def_readwrite("kernel_extent", &problem::kernel_extent)
        .def_property_readonly("out_height", &problem::out_height)
        .def_property_readonly("out_width", &problem::out_width)
        .def_property_readonly("input_shape", [](const problem& p) { return input_shape(p); })
        .def_property_readonly("filter_shape", [](const problem& p) { return filter_shape(p); })
        .def_property_readonly("output_shape", [](const problem& p) { return output_shape(p); })
        .def("validate", [](const problem& p) { validate(p); },
             "Raises InvalidArgumentError naming the first field out of range.")
        .def("__eq__", [](const problem& a, const problem& b) { return a == b; })
        .def("__repr__", [](const problem& p) { return "fftconv.Problem(" + to_string(p) + ")"; });

    py::class_<dispatch_decision>(m, "Plan", "Which path a problem takes (fftconv/dispatch.hpp).")
        .def_property_readonly("path", [](const dispatch_decision& d) { return std::string(to_string(d.path)); })
        .def_property_readonly("tile_extent", [](const dispatch_decision& d) { return d.geometry.tile_extent(); })
        .def_property_readonly("kernel_extent", [](const dispatch_decision& d) { return d.geometry.kernel_extent(); })
        .def_property_readonly("out_tile", [](const dispatch_decision& d) { return d.geometry.out_tile(); })
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
            configs.append(py::make_tuple(c.kernel_extent, c.channels, c.tile_extent));
        return configs;
    }, "The compiled configurations (kernel_extent, channels, tile_extent), in table order.");
    m.def("device_count", &device_count, "Visible CUDA devices (0 when none can be used).");
    m.def("require_device", &require_device, py::arg("device"),
          "Raises CudaError saying why when `device` cannot be used.");
    m.def("workspace_size", &workspace_size, py::arg("problem"), py::arg("device"));
    m.def("conv2d", &conv2d, py::arg("problem"), py::arg("x"), py::arg("w"), py::arg("out"), py::arg("device"),
          py::arg("stream"));
    m.def("conv2d_with_spectrum", &conv2d_with_spectrum, py::arg("problem"), py::arg("x"), py::arg("w"),
          py::arg("out"), py::arg("device"), py::arg("stream"));
    m.def("transform_filter", &transform_filter, py::arg("problem"), py::arg("w"), py::arg("device"),
          py::arg("stream"));
    m.def("clear_cache", [] { contexts().clear(); },
          "Frees every cached context (workspaces, cuFFT plans). Work in flight must be finished.");
    m.def("cached_contexts", [] { return contexts().size(); });

    py::class_<python_filter_spectrum>(m, "FilterSpectrum",
                                       "A filter already transformed (inference): pass it as w to conv2d.")
        .def_property_readonly("in_channels", [](const python_filter_spectrum& s) { return s.spectrum.in_channels(); })
        .def_property_readonly("out_channels", [](const python_filter_spectrum& s) { return s.spectrum.out_channels(); })
        .def_property_readonly("kernel_extent", [](const python_filter_spectrum& s) { return s.spectrum.geometry().kernel_extent(); })
        .def_property_readonly("tile_extent", [](const python_filter_spectrum& s) { return s.spectrum.geometry().tile_extent(); })
        .def_property_readonly("nbytes", [](const python_filter_spectrum& s) { return s.spectrum.bytes(); })
        .def_property_readonly("device", [](const python_filter_spectrum& s) { return s.device; })
        .def_property_readonly("problem", [](const python_filter_spectrum& s) { return s.made_for; })
        .def("__repr__", [](const python_filter_spectrum& s) {
            return "fftconv.FilterSpectrum(out_channels=" + std::to_string(s.spectrum.out_channels()) +
                   ", in_channels=" + std::to_string(s.spectrum.in_channels()) +
                   ", kernel_extent=" + std::to_string(s.spectrum.geometry().kernel_extent()) +
                   ", tile_extent=" + std::to_string(s.spectrum.geometry().tile_extent()) +
                   ", device=" + std::to_string(s.device) + ")";
        });

    py::class_<device_array>(m, "DeviceArray",
                             "A float32 CUDA array fftconv allocated; export it with torch.from_dlpack, "
                             "cupy.from_dlpack or jax.dlpack.from_dlpack.")
        .def(py::init([](const shape4& shape, int device, std::uintptr_t stream) {
                 return device_array(shape, device, stream);
             }),
             py::arg("shape"), py::arg("device"), py::arg("stream") = 0)
        .def_property_readonly("shape", [](const device_array& a) { return a.shape(); })
        .def_property_readonly("device", &device_array::device)
        .def_property_readonly("dtype", [](const device_array&) { return "float32"; })
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
            return "fftconv.DeviceArray(shape=" + to_string(a.shape()) + ", device=" + std::to_string(a.device()) + ")";
        });
}
