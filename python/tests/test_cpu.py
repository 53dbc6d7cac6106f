"""The Python module without a GPU: import, planning, validation, and the
errors every misuse gets. Runs in CI (meson test, suite 'python') against
the module in the build tree. Checks that need no device pass on a GPU
machine too; the few that expect "no device" skip there."""
import ctypes

import pytest

import fftconv


def no_gpu():
    return fftconv.device_count() == 0


def test_import_and_version():
    assert fftconv.__version__ == "0.1.0"
    assert isinstance(fftconv.device_count(), int) and fftconv.device_count() >= 0


def test_plan_takes_a_compiled_configuration_when_the_problem_matches_it():
    kernel_extent, channels, tile_extent = fftconv.compiled_configs()[0]
    plan = fftconv.plan((2, channels, 4 * tile_extent, 4 * tile_extent),
                        (channels, channels, kernel_extent, kernel_extent))
    assert plan.path == "compiled"
    assert plan.tile_extent == tile_extent
    assert plan.kernel_extent == kernel_extent
    assert (plan.in_channels, plan.out_channels) == (channels, channels)
    assert plan.out_tile == tile_extent - kernel_extent + 1


def test_plan_takes_the_generic_path_for_other_problems():
    configured_channels = {channels for _, channels, _ in fftconv.compiled_configs()}
    in_channels = 3
    assert in_channels not in configured_channels
    plan = fftconv.plan(fftconv.Problem(batch=1, in_channels=in_channels, out_channels=5,
                                        height=50, width=41, kernel_extent=7))
    assert plan.path == "generic"
    assert plan.tile_extent >= 7
    assert (plan.in_channels, plan.out_channels) == (in_channels, 5)


def test_problem_for_reads_shapes():
    problem = fftconv.problem_for((2, 3, 40, 36), (8, 3, 5, 5))
    assert (problem.batch, problem.in_channels, problem.out_channels) == (2, 3, 8)
    assert (problem.height, problem.width, problem.kernel_extent) == (40, 36, 5)
    assert tuple(problem.output_shape) == (2, 8, 36, 32)


@pytest.mark.parametrize("x_shape, w_shape, words", [
    ((1, 3, 8), (2, 3, 3, 3), ["x has shape [1, 3, 8]", "4 dimensions"]),
    ((1, 3, 8, 8), (2, 3, 3), ["w has shape [2, 3, 3]"]),
    ((1, 3, 8, 8), (2, 3, 3, 5), ["square", "3 x 5"]),
    ((1, 3, 8, 8), (2, 4, 3, 3), ["w has 4 input channels", "x has 3"]),
    ((1, 3, 8, 8), (2, 3, 9, 9), ["kernel_extent = 9", "height = 8"]),
    ((0, 3, 8, 8), (2, 3, 3, 3), ["batch", "0"]),
])
def test_invalid_shapes_raise_invalid_argument_naming_the_problem(x_shape, w_shape, words):
    with pytest.raises(fftconv.InvalidArgumentError) as raised:
        fftconv.plan(x_shape, w_shape)
    error = raised.value
    assert isinstance(error, ValueError) and isinstance(error, fftconv.Error)
    assert error.status == "invalid_argument" and error.code == 1
    assert error.message.startswith("fftconv: ")
    for word in words:
        assert word in error.message, f"{word!r} not in {error.message!r}"
    assert "[invalid_argument]" in str(error)


def test_error_classes_follow_the_status():
    from fftconv import _errors
    assert type(_errors.from_native("m", "out_of_memory", 5)) is fftconv.OutOfMemoryError
    assert isinstance(_errors.from_native("m", "out_of_memory", 5), MemoryError)
    assert type(_errors.from_native("m", "cufft_error", 3)) is fftconv.CudaError
    assert type(_errors.from_native("m", "internal_error", 6)) is fftconv.Error


def test_cpu_arrays_are_refused_before_any_device_is_touched():
    numpy = pytest.importorskip("numpy")
    x = numpy.zeros((1, 3, 8, 8), numpy.float32)
    w = numpy.zeros((2, 3, 3, 3), numpy.float32)
    with pytest.raises(fftconv.InvalidArgumentError, match=r"x is in CPU memory \(DLPack device type 1\)"):
        fftconv.conv2d(x, w)
    with pytest.raises(fftconv.InvalidArgumentError, match="w is in CPU memory"):
        fftconv.transform_filter(w, x.shape)


def test_objects_without_dlpack_are_refused():
    with pytest.raises(fftconv.InvalidArgumentError, match="list, which has no shape"):
        fftconv.conv2d([[1.0]], [[1.0]])


def test_bad_stream_argument_is_refused():
    numpy = pytest.importorskip("numpy")
    from fftconv import _frameworks
    with pytest.raises(fftconv.InvalidArgumentError, match="stream is a str"):
        _frameworks.stream_handle("default")
    assert _frameworks.stream_handle(1234) == 1234


# A DLPack capsule made by hand: the native checks see a "CUDA" tensor whose
# data is never touched, because every check below fails before any use.
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class FakeCudaTensor:
    """Owns the ctypes memory a capsule points into; the capsule has no
    destructor, so nothing is freed twice."""

    def __init__(self, shape, dtype_bits=32, dtype_code=2, strides=None, device_type=2, device_id=0):
        self.shape_array = (ctypes.c_int64 * len(shape))(*shape)
        self.strides_array = (ctypes.c_int64 * len(strides))(*strides) if strides else None
        self.managed = DLManagedTensor()
        tensor = self.managed.dl_tensor
        tensor.data = 0x10000
        tensor.device = DLDevice(device_type, device_id)
        tensor.ndim = len(shape)
        tensor.dtype = DLDataType(dtype_code, dtype_bits, 1)
        tensor.shape = self.shape_array
        if self.strides_array is not None:
            tensor.strides = self.strides_array

    def capsule(self):
        make = ctypes.pythonapi.PyCapsule_New
        make.restype = ctypes.py_object
        make.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return make(ctypes.addressof(self.managed), b"dltensor", None)


PROBLEM = dict(batch=1, in_channels=3, out_channels=2, height=8, width=8, kernel_extent=3)


def native_conv2d(x, w, y):
    fftconv._native.conv2d(fftconv.Problem(**PROBLEM), x.capsule(), w.capsule(), y.capsule(), 0, 0)


def good_x():
    return FakeCudaTensor((1, 3, 8, 8))


def good_w():
    return FakeCudaTensor((2, 3, 3, 3))


def good_y():
    return FakeCudaTensor((1, 2, 6, 6))


@pytest.mark.parametrize("x, w, y, message", [
    (FakeCudaTensor((1, 3, 8, 8), dtype_bits=64), good_w(), good_y(), "x has dtype float64; fftconv computes in float32"),
    (good_x(), FakeCudaTensor((2, 3, 3, 3), dtype_code=0, dtype_bits=32), good_y(), "w has dtype int32"),
    (FakeCudaTensor((3, 8, 8)), good_w(), good_y(), "x has 3 dimensions"),
    (good_x(), good_w(), FakeCudaTensor((1, 2, 6, 7)), r"out has shape \[1, 2, 6, 7\]; expected \[1, 2, 6, 6\]"),
    (FakeCudaTensor((1, 3, 8, 8), strides=(192, 1, 24, 3)), good_w(), good_y(), "x is not a dense NCHW tensor"),
    (good_x(), FakeCudaTensor((2, 3, 3, 3), device_id=1), good_y(), "w is on CUDA device 1 but the input x is on CUDA device 0"),
    (good_x(), good_w(), FakeCudaTensor((1, 2, 6, 6), device_type=1), "out is in CPU memory"),
])
def test_native_checks_name_what_is_wrong(x, w, y, message):
    with pytest.raises(fftconv.InvalidArgumentError, match=message):
        native_conv2d(x, w, y)


def test_extents_of_one_may_have_any_stride():
    # PyTorch reports arbitrary strides for extents of 1; they must not be refused.
    x = FakeCudaTensor((1, 3, 8, 8), strides=(999, 64, 8, 1))
    if not no_gpu():
        pytest.skip("a GPU is present: the call would reach the device with a fake pointer")
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
        native_conv2d(x, good_w(), good_y())


def test_a_consumed_capsule_is_refused():
    capsule = good_x().capsule()
    ctypes.pythonapi.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
    ctypes.pythonapi.PyCapsule_SetName(capsule, b"used_dltensor")
    with pytest.raises(fftconv.InvalidArgumentError, match="x is not an unconsumed DLPack capsule"):
        fftconv._native.conv2d(fftconv.Problem(**PROBLEM), capsule, good_w().capsule(),
                               good_y().capsule(), 0, 0)


@pytest.mark.skipif(not no_gpu(), reason="a GPU is present")
def test_without_a_gpu_device_work_raises_cuda_error_saying_why():
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device") as raised:
        fftconv.workspace_size((1, 3, 8, 8), (2, 3, 3, 3))
    assert raised.value.status == "cuda_error"
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
        fftconv.DeviceArray((1, 2, 6, 6), 0)


def test_fftconv_torch_needs_pytorch():
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="torch"):
            fftconv.torch  # noqa: B018
    else:
        assert issubclass(fftconv.torch.Conv2d, torch.nn.Conv2d)
