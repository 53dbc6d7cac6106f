"""The Python module without a GPU: import, planning, problems (kernel,
padding, groups, stride and dilation refused unless 1), validation, and the
errors every misuse gets (tensors, bias). Runs in CI (meson test, suite 'python') against
the module in the build tree. Checks that need no device pass on a GPU
machine too; the few that expect "no device" skip there."""
import ctypes
import os

import pytest

import fftconv


def no_gpu():
    return fftconv.device_count() == 0


def test_import_and_version():
    import pathlib
    import re
    meson_build = (pathlib.Path(__file__).resolve().parents[2] / "meson.build").read_text()
    version = re.search(r"project\('fftconv'.*?version\s*:\s*'([^']+)'", meson_build, re.S).group(1)
    assert fftconv.__version__ == version
    assert isinstance(fftconv.device_count(), int) and fftconv.device_count() >= 0


def test_plan_takes_a_compiled_configuration_when_the_problem_matches_it():
    kernel_extent, channels, tile_extent, depthwise = fftconv.compiled_configs()[0]
    assert not depthwise
    plan = fftconv.plan((2, channels, 4 * tile_extent, 4 * tile_extent),
                        (channels, channels, kernel_extent, kernel_extent))
    assert plan.path == "compiled"
    assert plan.tile_extent == tile_extent
    assert plan.kernel == (kernel_extent, kernel_extent)
    assert (plan.in_channels, plan.out_channels) == (channels, channels)
    assert plan.out_tile == (tile_extent - kernel_extent + 1,) * 2


def test_plan_takes_the_generic_path_for_other_problems():
    configured_channels = {channels for _, channels, _, _ in fftconv.compiled_configs()}
    in_channels = 3
    assert in_channels not in configured_channels
    # A kernel wider than the direct kernels take keeps this problem on the FFT path.
    plan = fftconv.plan(fftconv.Problem(batch=1, in_channels=in_channels, out_channels=5,
                                        height=90, width=81, kernel=33))
    assert plan.path == "generic"
    assert plan.tile_extent >= 33
    assert (plan.in_channels, plan.out_channels) == (in_channels, 5)


def test_plan_takes_the_direct_path_for_small_dense_problems():
    plan = fftconv.plan(fftconv.Problem(batch=1, in_channels=16, out_channels=16,
                                        height=32, width=32, kernel=4))
    assert plan.path == "direct"
    assert plan.kernel == (4, 4)


def test_problem_for_reads_shapes():
    problem = fftconv.problem_for((2, 3, 40, 36), (8, 3, 5, 5))
    assert (problem.batch, problem.in_channels, problem.out_channels) == (2, 3, 8)
    assert (problem.height, problem.width, problem.kernel) == (40, 36, (5, 5))
    assert (problem.padding, problem.groups, problem.stride, problem.dilation) == ((0, 0), 1, 1, 1)
    assert tuple(problem.output_shape) == (2, 8, 36, 32)


@pytest.mark.parametrize("x_shape, w_shape, words", [
    ((1, 3, 8), (2, 3, 3, 3), ["x has shape [1, 3, 8]", "4 dimensions"]),
    ((1, 3, 8, 8), (2, 3, 3), ["w has shape [2, 3, 3]"]),
    ((1, 3, 8, 8), (2, 4, 3, 3), ["w has 4 input channels", "x has 3"]),
    ((1, 3, 8, 8), (2, 3, 9, 9), ["kernel.height = 9", "padded height 8"]),
    ((1, 3, 8, 8), (2, 3, 3, 9), ["kernel.width = 9", "padded width 8"]),
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

    def __init__(self, shape, dtype_bits=32, dtype_code=2, strides=None, device_type=2, device_id=0, byte_offset=0):
        self.shape_array = (ctypes.c_int64 * len(shape))(*shape)
        self.strides_array = (ctypes.c_int64 * len(strides))(*strides) if strides else None
        self.managed = DLManagedTensor()
        tensor = self.managed.dl_tensor
        tensor.data = 0x10000
        tensor.device = DLDevice(device_type, device_id)
        tensor.ndim = len(shape)
        tensor.dtype = DLDataType(dtype_code, dtype_bits, 1)
        tensor.shape = self.shape_array
        tensor.byte_offset = byte_offset
        if self.strides_array is not None:
            tensor.strides = self.strides_array

    def capsule(self):
        make = ctypes.pythonapi.PyCapsule_New
        make.restype = ctypes.py_object
        make.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return make(ctypes.addressof(self.managed), b"dltensor", None)


PROBLEM = dict(batch=1, in_channels=3, out_channels=2, height=8, width=8, kernel=3)


def native_conv2d(x, w, y, bias=None, problem=PROBLEM):
    fftconv._native.conv2d(fftconv.Problem(**problem), x.capsule(), w.capsule(),
                           None if bias is None else bias.capsule(), y.capsule(), 0, 0)


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


# Activations (x and y of conv2d, dy and dx of conv2d_backward_data) may be
# bfloat16 (DLPack kDLBfloat = 4, 16 bits) or float16 (kDLFloat, 16 bits),
# both of a call the same; filters, biases and the filter gradient's
# operands are float32 only.
BF16 = dict(dtype_code=4, dtype_bits=16)
FP16 = dict(dtype_code=2, dtype_bits=16)


@pytest.mark.parametrize("x, w, y, message", [
    (FakeCudaTensor((1, 3, 8, 8), **BF16), good_w(), good_y(),
     r"out has dtype float32 but x has dtype bfloat16: fftconv writes out in x's dtype"),
    (FakeCudaTensor((1, 3, 8, 8), **FP16), good_w(), FakeCudaTensor((1, 2, 6, 6), **BF16),
     "out has dtype bfloat16 but x has dtype float16"),
    (good_x(), good_w(), FakeCudaTensor((1, 2, 6, 6), **FP16), "out has dtype float16 but x has dtype float32"),
    (FakeCudaTensor((1, 3, 8, 8), **BF16), good_w(), FakeCudaTensor((1, 2, 6, 6), dtype_bits=64),
     "out has dtype float64 but x has dtype bfloat16"),
    (FakeCudaTensor((1, 3, 8, 8), dtype_code=0, dtype_bits=16), good_w(), good_y(),
     "x has dtype int16; fftconv computes in float32 and takes x as float32, bfloat16 or float16"),
    (FakeCudaTensor((1, 3, 8, 8), **BF16), FakeCudaTensor((2, 3, 3, 3), **BF16), FakeCudaTensor((1, 2, 6, 6), **BF16),
     r"w has dtype bfloat16; fftconv takes w in float32 only .*: convert it first, e.g. w.float\(\)"),
    (FakeCudaTensor((1, 3, 8, 8), **FP16), FakeCudaTensor((2, 3, 3, 3), **FP16), FakeCudaTensor((1, 2, 6, 6), **FP16),
     "w has dtype float16; fftconv takes w in float32 only"),
    (FakeCudaTensor((1, 3, 8, 8), **BF16, byte_offset=1), good_w(), FakeCudaTensor((1, 2, 6, 6), **BF16),
     "x is not aligned to 2 bytes"),
    (good_x(), good_w(), FakeCudaTensor((1, 2, 6, 6), byte_offset=2), "out is not aligned to 4 bytes"),
    (FakeCudaTensor((1, 3, 8, 8), **BF16, strides=(192, 1, 24, 3)), good_w(), FakeCudaTensor((1, 2, 6, 6), **BF16),
     "x is not a dense NCHW tensor"),
    (FakeCudaTensor((1, 3, 8, 9), **FP16), good_w(), FakeCudaTensor((1, 2, 6, 6), **FP16),
     r"x has shape \[1, 3, 8, 9\]; expected \[1, 3, 8, 8\]"),
    (FakeCudaTensor((1, 3, 8, 8), **FP16), good_w(), FakeCudaTensor((1, 2, 6, 7), **FP16),
     r"out has shape \[1, 2, 6, 7\]; expected \[1, 2, 6, 6\]"),
    (FakeCudaTensor((1, 3, 8, 8), **BF16), good_w(), FakeCudaTensor((1, 2, 6, 6), **BF16, device_type=1),
     "out is in CPU memory"),
], ids=["bf16-x-float32-out", "fp16-x-bf16-out", "float32-x-fp16-out", "bf16-x-float64-out", "int16-x", "bf16-w",
        "fp16-w", "bf16-x-misaligned", "float32-out-misaligned", "bf16-x-not-dense", "fp16-x-shape",
        "fp16-out-shape", "bf16-out-on-cpu"])
def test_native_checks_of_half_activations(x, w, y, message):
    with pytest.raises(fftconv.InvalidArgumentError, match=message):
        native_conv2d(x, w, y)


def test_native_half_bias_is_refused():
    x, y = FakeCudaTensor((1, 3, 8, 8), **BF16), FakeCudaTensor((1, 2, 6, 6), **BF16)
    with pytest.raises(fftconv.InvalidArgumentError,
                       match="bias has dtype bfloat16; fftconv takes bias in float32 only"):
        native_conv2d(x, good_w(), y, FakeCudaTensor((2,), **BF16))
    with pytest.raises(fftconv.InvalidArgumentError, match="bias has dtype float16; fftconv takes bias in float32"):
        native_conv2d(x, good_w(), y, FakeCudaTensor((2,), **FP16))


@pytest.mark.skipif(not no_gpu(), reason="a GPU is present: the call would reach the device with fake pointers")
@pytest.mark.parametrize("dtype", [BF16, FP16, dict()], ids=["bf16", "fp16", "float32"])
def test_native_checks_pass_half_activations(dtype):
    x, y = FakeCudaTensor((1, 3, 8, 8), **dtype), FakeCudaTensor((1, 2, 6, 6), **dtype)
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
        native_conv2d(x, good_w(), y, good_bias())
    dy, dx = FakeCudaTensor((1, 2, 6, 6), **dtype), FakeCudaTensor((1, 3, 8, 8), **dtype)
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
        native_backward_data(dy, good_w(), dx)


def native_backward_data(dy, w, dx, problem=PROBLEM):
    fftconv._native.conv2d_backward_data(fftconv.Problem(**problem), dy.capsule(), w.capsule(), dx.capsule(), 0, 0)


def native_backward_filter(x, dy, dw, dbias=None, problem=PROBLEM):
    fftconv._native.conv2d_backward_filter(fftconv.Problem(**problem), x.capsule(), dy.capsule(), dw.capsule(),
                                           None if dbias is None else dbias.capsule(), 0, 0)


@pytest.mark.parametrize("dy, w, dx, message", [
    (FakeCudaTensor((1, 2, 6, 6), **BF16), good_w(), FakeCudaTensor((1, 3, 8, 8)),
     r"dx has dtype float32 but dy has dtype bfloat16: fftconv writes dx in dy's dtype"),
    (FakeCudaTensor((1, 2, 6, 6), **BF16), good_w(), FakeCudaTensor((1, 3, 8, 8), **FP16),
     "dx has dtype float16 but dy has dtype bfloat16"),
    (FakeCudaTensor((1, 2, 6, 6), dtype_bits=64), good_w(), FakeCudaTensor((1, 3, 8, 8)),
     "dy has dtype float64; fftconv computes in float32 and takes dy as float32, bfloat16 or float16"),
    (FakeCudaTensor((1, 2, 6, 6), **FP16), FakeCudaTensor((2, 3, 3, 3), **FP16), FakeCudaTensor((1, 3, 8, 8), **FP16),
     "w has dtype float16; fftconv takes w in float32 only"),
    (FakeCudaTensor((1, 2, 6, 6), **FP16), good_w(), FakeCudaTensor((1, 3, 8, 7), **FP16),
     r"dx has shape \[1, 3, 8, 7\]; expected \[1, 3, 8, 8\]"),
], ids=["bf16-dy-float32-dx", "bf16-dy-fp16-dx", "float64-dy", "fp16-w", "fp16-dx-shape"])
def test_native_backward_data_checks_half_activations(dy, w, dx, message):
    with pytest.raises(fftconv.InvalidArgumentError, match=message):
        native_backward_data(dy, w, dx)


@pytest.mark.parametrize("x, dy, message", [
    (FakeCudaTensor((1, 3, 8, 8), **BF16), FakeCudaTensor((1, 2, 6, 6)),
     "x has dtype bfloat16; fftconv takes x in float32 only"),
    (good_x(), FakeCudaTensor((1, 2, 6, 6), **FP16), "dy has dtype float16; fftconv takes dy in float32 only"),
])
def test_native_backward_filter_stays_float32(x, dy, message):
    with pytest.raises(fftconv.InvalidArgumentError, match=message):
        native_backward_filter(x, dy, FakeCudaTensor((2, 3, 3, 3)))


def test_device_array_dtype_is_checked_before_any_device_work():
    with pytest.raises(fftconv.InvalidArgumentError,
                       match="dtype = 'float64': expected 'float32', 'bfloat16' or 'float16'"):
        fftconv.DeviceArray((1, 2, 6, 6), 0, 0, "float64")


@pytest.mark.parametrize("shape, dtype", [
    ((2**32, 2**32, 1, 1), "float32"),   # 2^64 elements: wrapped to 0 and was exported as such
    ((2**31, 2**30, 1, 1), "float32"),   # 2^61 elements fit, their 2^63 bytes do not
    ((1, 2**31, 2**31, 2), "bfloat16"),
    ((0, 2**62, 2**62, 1), "float16"),   # no elements, but a consumer's strides would wrap
])
def test_device_array_too_large_is_refused_naming_the_shape_before_any_device_work(shape, dtype):
    words = "[" + ", ".join(map(str, shape)) + "]"
    with pytest.raises(fftconv.InvalidArgumentError) as raised:
        fftconv.DeviceArray(shape, 0, 0, dtype)
    assert words in raised.value.message and "2^63 - 1 bytes" in raised.value.message
    assert isinstance(raised.value, ValueError) and raised.value.status == "invalid_argument"


def test_device_array_negative_extent_is_refused_before_any_device_work():
    with pytest.raises(fftconv.InvalidArgumentError, match=r"negative extent in \[1, -2, 3, 4\]"):
        fftconv.DeviceArray((1, -2, 3, 4), 0)
    with pytest.raises(fftconv.InvalidArgumentError, match=r"negative extent in \[2147483648, 2147483648, 4, -1\]"):
        fftconv.DeviceArray((2**31, 2**31, 4, -1), 0)  # named as negative, not as too large


def test_outputs_take_the_inputs_dtype():
    from fftconv import _frameworks

    class Typed:
        def __init__(self, dtype):
            self.dtype = dtype

    numpy = pytest.importorskip("numpy")
    assert _frameworks.activation_dtype(Typed("bfloat16")) == "bfloat16"           # JAX (ml_dtypes)
    assert _frameworks.activation_dtype(Typed(numpy.dtype("float16"))) == "float16"  # CuPy, NumPy
    assert _frameworks.activation_dtype(Typed(numpy.dtype("float32"))) == "float32"
    assert _frameworks.activation_dtype(Typed(numpy.dtype("float64"))) == "float32"  # refused natively, naming x
    assert _frameworks.activation_dtype(object()) == "float32"
    assert _frameworks.allocate("dlpack", object(), (1, 2, 3, 4), 0, 0) is None      # the native call allocates


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
        fftconv._native.conv2d(fftconv.Problem(**PROBLEM), capsule, good_w().capsule(), None,
                               good_y().capsule(), 0, 0)


@pytest.mark.skipif(not no_gpu(), reason="a GPU is present")
def test_without_a_gpu_device_work_raises_cuda_error_saying_why():
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device") as raised:
        fftconv.workspace_size((1, 3, 8, 8), (2, 3, 3, 3))
    assert raised.value.status == "cuda_error"
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
        fftconv.DeviceArray((1, 2, 6, 6), 0)


def test_the_context_cache_takes_calls_from_several_threads():
    # Every cache entry point releases the GIL and takes the cache's mutex
    # (python/src/context_cache.hpp): threads take turns, none deadlocks.
    from threads import run_in_threads
    native = fftconv._native
    saved = native.context_cache_capacity()

    def work(index):
        for n in range(200):
            native.set_context_cache_capacity(1 + (index + n) % 5)
            assert 1 <= native.context_cache_capacity() <= 5
            assert native.cached_contexts() >= 0 and native.pinned_contexts(0) >= 0
            assert not native.has_context(0, 0x1234 + index) or native.cached_streams(0)
            assert native.workspace_limit(0) > 0
            if n % 50 == 0:
                native.clear_cache()

    try:
        run_in_threads(work, 4, timeout=60)
    finally:
        native.set_context_cache_capacity(saved)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_another_thread_holds_the_cache_lock_does_not_hang():
    # The cache's lock is held without the GIL (python/src/context_cache.hpp), so
    # a fork can happen while another thread holds it; the child, which has
    # no such thread, gets a fresh cache (fftconv/__init__.py).
    import threading
    import time
    native = fftconv._native
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            native.cached_contexts()  # takes and releases the lock

    thread = threading.Thread(target=busy)
    thread.start()
    try:
        for _ in range(20):  # forks at varying points of the other thread's loop
            pid = os.fork()
            if pid == 0:
                try:
                    native.cached_contexts()
                    native.set_context_cache_capacity(3)
                    os._exit(0)
                except BaseException:  # noqa: BLE001 (the exit status tells)
                    os._exit(3)
            deadline = time.monotonic() + 20
            while (waited := os.waitpid(pid, os.WNOHANG))[0] == 0:
                if time.monotonic() > deadline:
                    os.kill(pid, 9)
                    os.waitpid(pid, 0)
                    pytest.fail("a forked child hung on the context cache's lock")
                time.sleep(0.01)
            assert os.waitstatus_to_exitcode(waited[1]) == 0
    finally:
        stop.set()
        thread.join()


def test_fftconv_torch_needs_pytorch():
    try:
        import torch  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="torch"):
            fftconv.torch  # noqa: B018
    else:
        assert issubclass(fftconv.torch.Conv2d, torch.nn.Conv2d)


# The whole operator: kernel (height, width), padding, groups, bias, and
# stride and dilation refused unless 1. Problems and argument parsing need no
# GPU; the GPU tests (marked full_operator) check the results.


def problem(**fields):
    base = dict(batch=2, in_channels=6, out_channels=4, height=30, width=20, kernel=3)
    base.update(fields)
    return fftconv.Problem(**base)


@pytest.mark.parametrize("kernel, expected", [
    (5, (5, 5)), ((7, 3), (7, 3)), ([1, 9], (1, 9)), ((4, 4), (4, 4)),
])
def test_problem_kernel_is_one_int_or_a_pair(kernel, expected):
    assert problem(kernel=kernel).kernel == expected


@pytest.mark.parametrize("kernel, padding, expected", [
    (3, 0, (0, 0)),
    (3, 2, (2, 2)),
    (3, (1, 4), (1, 4)),
    (3, [0, 2], (0, 2)),
    (5, "valid", (0, 0)),
    (5, "same", (2, 2)),
    ((7, 3), "same", (3, 1)),
    ((1, 31), "same", (0, 15)),
])
def test_problem_padding_is_an_int_a_pair_valid_or_same(kernel, padding, expected):
    p = problem(kernel=kernel, padding=padding)
    assert p.padding == expected
    p.validate()


def test_problem_defaults_and_fields():
    p = problem()
    assert (p.batch, p.in_channels, p.out_channels, p.height, p.width) == (2, 6, 4, 30, 20)
    assert (p.kernel, p.padding, p.groups, p.stride, p.dilation) == ((3, 3), (0, 0), 1, 1, 1)
    # Positional, in the constructor's order, as before the operator grew.
    assert fftconv.Problem(2, 6, 4, 30, 20, 3) == p


def test_problem_accepts_integers_of_other_types():
    numpy = pytest.importorskip("numpy")
    p = problem(kernel=(numpy.int64(5), numpy.int32(3)), padding=numpy.int64(1))
    assert (p.kernel, p.padding) == ((5, 3), (1, 1))


@pytest.mark.parametrize("kernel, words", [
    (4, ["padding='same'", "even kernel height 4", "padding 1 above and 2 below",
         "torch.nn.functional.pad(x, (1, 2, 1, 2))", "padding=0"]),
    ((3, 4), ["even kernel width 4", "padding 1 on the left and 2 on the right",
              "torch.nn.functional.pad(x, (1, 2, 1, 1))"]),
    ((2, 5), ["even kernel height 2", "padding 0 above and 1 below", "pad(x, (2, 2, 0, 1))"]),
])
def test_same_padding_of_an_even_kernel_is_refused_saying_how_to_pad(kernel, words):
    with pytest.raises(ValueError) as raised:
        problem(kernel=kernel, padding="same")
    error = raised.value
    assert isinstance(error, fftconv.InvalidArgumentError) and error.status == "invalid_argument"
    for word in words:
        assert word in error.message, f"{word!r} not in {error.message!r}"


@pytest.mark.parametrize("fields, error, message", [
    (dict(kernel=3.0), TypeError, "kernel must be an int or a .height, width. pair, not float"),
    (dict(kernel="3"), TypeError, "kernel must be an int or a .height, width. pair, not str"),
    (dict(kernel=None), TypeError, "kernel must be an int or a .height, width. pair, not NoneType"),
    (dict(kernel=True), TypeError, "kernel must be an int or a .height, width. pair, not bool"),
    (dict(kernel=(3, 3, 3)), fftconv.InvalidArgumentError, r"kernel = \(3, 3, 3\) has 3 values"),
    (dict(kernel=(3, 2.5)), TypeError, r"kernel\[1\] must be an int, not float"),
    (dict(padding="full"), fftconv.InvalidArgumentError, "padding = 'full': expected an int, a .height, width. "
                                                         "pair, 'same' or 'valid'"),
    (dict(padding=(1,)), fftconv.InvalidArgumentError, r"padding = \(1,\) has 1 values"),
    (dict(padding=1.5), TypeError, "padding must be an int or a .height, width. pair, not float"),
])
def test_problem_arguments_of_the_wrong_kind_are_refused_by_name(fields, error, message):
    with pytest.raises(error, match=message):
        problem(**fields)


def test_problem_properties_are_writable():
    p = problem()
    p.kernel = 5
    assert p.kernel == (5, 5)
    p.kernel = (7, 3)
    assert p.kernel == (7, 3)
    assert p.padding == (0, 0)  # setting the kernel leaves the padding alone
    p.padding = "same"          # 'same' for the current kernel
    assert p.padding == (3, 1)
    p.padding = (1, 2)
    assert p.padding == (1, 2)
    p.padding = 0
    assert p.padding == (0, 0)
    p.groups = 2
    p.batch, p.height, p.width = 1, 16, 12
    assert (p.groups, p.batch, p.height, p.width) == (2, 1, 16, 12)
    with pytest.raises(TypeError, match="kernel must be"):
        p.kernel = "big"
    p.kernel = (4, 3)
    with pytest.raises(fftconv.InvalidArgumentError, match="even kernel height 4"):
        p.padding = "same"
    assert p.padding == (0, 0)  # a refused value changes nothing


def test_problem_shapes_follow_padding_groups_and_rectangular_kernels():
    p = problem(batch=2, in_channels=6, out_channels=4, height=30, width=20, kernel=(5, 3), padding=(1, 2),
                groups=2)
    assert (p.out_height, p.out_width) == (30 + 2 - 5 + 1, 20 + 4 - 3 + 1)
    assert tuple(p.input_shape) == (2, 6, 30, 20)
    assert tuple(p.filter_shape) == (4, 3, 5, 3)  # [out, in / groups, kernel height, kernel width]
    assert tuple(p.output_shape) == (2, 4, 28, 22)
    depthwise = problem(in_channels=8, out_channels=8, groups=8, kernel=(7, 5), padding="same")
    assert tuple(depthwise.filter_shape) == (8, 1, 7, 5)
    assert tuple(depthwise.output_shape) == (2, 8, 30, 20)  # 'same': the input's size


def test_problem_repr_names_padding_and_groups_only_when_set():
    assert repr(problem(kernel=(5, 3))) == ("fftconv.Problem(batch=2 in_channels=6 out_channels=4 "
                                            "height=30 width=20 kernel=5x3)")
    assert repr(problem(kernel=(5, 3), padding="same", groups=2)) == (
        "fftconv.Problem(batch=2 in_channels=6 out_channels=4 height=30 width=20 kernel=5x3 "
        "padding=2x1 groups=2)")


def test_problem_equality_covers_the_new_fields():
    assert problem(padding=1) == problem(padding=(1, 1))
    assert problem(padding=1) != problem()
    assert problem(groups=2) != problem()
    assert problem(kernel=(3, 5)) != problem(kernel=(5, 3))


@pytest.mark.parametrize("other", [None, 0, "problem", (2, 6, 4, 30, 20, 3), object()])
def test_a_problem_compares_unequal_to_other_types(other):
    # Comparing with anything else raised TypeError (incompatible function arguments).
    assert (problem() == other) is False and (other == problem()) is False
    assert (problem() != other) is True and (other != problem()) is True
    assert problem() in [None, problem()] and problem(groups=2) not in [None, problem()]


@pytest.mark.parametrize("fields, message", [
    (dict(stride=2), r"problem\.stride = 2 is not supported"),
    (dict(dilation=3), r"problem\.dilation = 3 is not supported"),
    (dict(groups=4), r"problem\.groups = 4 must divide problem\.in_channels = 6 and problem\.out_channels = 4"),
    (dict(groups=0), r"problem\.groups = 0 must be at least 1"),
    (dict(padding=(-1, 0)), r"problem\.padding\.height = -1 must be at least 0"),
    (dict(kernel=(3, 0)), r"problem\.kernel\.width = 0 must be at least 1"),
    (dict(kernel=(3, 25)), r"problem\.kernel\.width = 25 exceeds the padded width 20"),
])
def test_validate_names_the_new_fields(fields, message):
    with pytest.raises(fftconv.InvalidArgumentError, match=message):
        problem(**fields).validate()


def test_problem_for_takes_padding_groups_and_rectangular_kernels():
    p = fftconv.problem_for((2, 6, 20, 24), (6, 1, 5, 7), padding="same", groups=6)
    assert (p.in_channels, p.out_channels, p.groups) == (6, 6, 6)
    assert (p.kernel, p.padding) == ((5, 7), (2, 3))
    assert tuple(p.output_shape) == (2, 6, 20, 24)
    p = fftconv.problem_for((1, 8, 16, 16), (12, 4, 3, 5), padding=(1, 0), groups=2)
    assert (p.in_channels, p.out_channels, p.groups) == (8, 12, 2)
    assert tuple(p.filter_shape) == (12, 4, 3, 5)
    assert tuple(p.output_shape) == (1, 12, 16, 12)
    p = fftconv.problem_for((1, 3, 8, 8), (2, 3, 3, 5), padding="valid", stride=(1, 1), dilation=1)
    assert (p.kernel, p.padding, tuple(p.output_shape)) == ((3, 5), (0, 0), (1, 2, 6, 4))


@pytest.mark.parametrize("x_shape, w_shape, options, words", [
    ((1, 6, 8, 8), (4, 2, 3, 3), dict(groups=2),
     ["w has 2 input channels per group (shape [4, 2, 3, 3])", "groups = 2 x needs 4",
      "x has 6 (shape [1, 6, 8, 8])"]),
    ((1, 6, 8, 8), (4, 3, 3, 3), dict(), ["w has 3 input channels (shape [4, 3, 3, 3])", "x has 6"]),
    ((1, 6, 8, 8), (4, 2, 3, 3), dict(groups=3),
     ["w has 4 output channels (shape [4, 2, 3, 3])", "groups = 3 does not divide"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(groups=0), ["groups = 0 must be at least 1"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(groups=-2), ["groups = -2 must be at least 1"]),
    ((1, 6, 8, 8), (4, 6, 4, 3), dict(padding="same"), ["even kernel height 4"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(padding="full"), ["padding = 'full'"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(padding=-1), ["problem.padding.height = -1"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(stride=2),
     ["stride = 2 is not supported", "stride-1 convolutions only", "stride must be 1"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(stride=(1, 2)), ["stride = (1, 2) is not supported"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(stride=(1, 1, 1)), ["stride = (1, 1, 1) has 3 values"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(dilation=2),
     ["dilation = 2 is not supported", "undilated convolutions only", "dilation must be 1"]),
    ((1, 6, 8, 8), (4, 6, 3, 3), dict(dilation=[2, 2]), ["dilation = [2, 2] is not supported"]),
    # stride and dilation are refused first, whatever else is wrong.
    ((1, 6, 8, 8), (4, 5, 3, 3), dict(stride=2), ["stride = 2"]),
])
def test_problem_for_refuses_by_name(x_shape, w_shape, options, words):
    with pytest.raises(fftconv.InvalidArgumentError) as raised:
        fftconv.problem_for(x_shape, w_shape, **options)
    error = raised.value
    assert error.message.startswith("fftconv: ") and error.status == "invalid_argument"
    for word in words:
        assert word in error.message, f"{word!r} not in {error.message!r}"


@pytest.mark.parametrize("options, message", [
    (dict(groups=1.0), "groups must be an int, not float"),
    (dict(groups=True), "groups must be an int, not bool"),
    (dict(stride="1"), "stride must be an int or a .height, width. pair, not str"),
    (dict(dilation=None), "dilation must be an int or a .height, width. pair, not NoneType"),
])
def test_problem_for_refuses_arguments_of_the_wrong_type(options, message):
    with pytest.raises(TypeError, match=message):
        fftconv.problem_for((1, 6, 8, 8), (4, 6, 3, 3), **options)


def test_plan_takes_padding_and_groups():
    kernel_extent, channels, tile_extent, depthwise = fftconv.compiled_configs()[0]
    assert not depthwise
    x_shape = (2, channels, 4 * tile_extent, 4 * tile_extent)
    w_shape = (channels, channels, kernel_extent, kernel_extent)
    # Padding is the call's: a compiled configuration still matches.
    padded = fftconv.plan(x_shape, w_shape, padding=kernel_extent // 2)
    assert (padded.path, padded.tile_extent, padded.kernel) == ("compiled", tile_extent, (kernel_extent,) * 2)
    same = fftconv.plan(fftconv.problem_for(x_shape, w_shape, padding=kernel_extent // 2))
    assert (same.path, same.tile_extent) == (padded.path, padded.tile_extent)
    grouped = fftconv.plan(x_shape, (channels, channels // 2, kernel_extent, kernel_extent), groups=2)
    assert grouped.path == "generic" and grouped.kernel == (kernel_extent, kernel_extent)


def test_plan_and_workspace_size_take_the_padding_and_groups_or_a_problem():
    with pytest.raises(fftconv.InvalidArgumentError, match="pass either a Problem"):
        fftconv.plan(problem(), padding=1)
    with pytest.raises(fftconv.InvalidArgumentError, match="pass either a Problem"):
        fftconv.workspace_size(problem(), groups=2)
    with pytest.raises(fftconv.InvalidArgumentError, match="groups = 3 does not divide"):
        fftconv.plan((1, 6, 8, 8), (4, 2, 3, 3), groups=3)
    with pytest.raises(fftconv.InvalidArgumentError, match="stride = 2"):
        fftconv._api.problem_for((1, 6, 8, 8), (4, 6, 3, 3), stride=2)


class FakeArray:
    """A DLPack producer fftconv does not know (framework 'dlpack'), whose
    capsule is a FakeCudaTensor's: good for checks made before any device
    work."""

    def __init__(self, shape, device_type=2, device_id=0):
        self.shape = tuple(shape)
        self.tensor = FakeCudaTensor(shape, device_type=device_type, device_id=device_id)

    def __dlpack__(self, stream=None, **kwargs):
        return self.tensor.capsule()

    def __dlpack_device__(self):
        return (self.tensor.managed.dl_tensor.device.device_type, self.tensor.managed.dl_tensor.device.device_id)


@pytest.mark.parametrize("options, error, message", [
    (dict(stride=2), fftconv.InvalidArgumentError, "stride = 2 is not supported"),
    (dict(dilation=(2, 1)), fftconv.InvalidArgumentError, r"dilation = \(2, 1\) is not supported"),
    (dict(padding="same"), fftconv.InvalidArgumentError, "even kernel"),
    (dict(groups=4), fftconv.InvalidArgumentError, "w has 6 input channels per group"),
    (dict(bias=FakeArray((3,))), fftconv.InvalidArgumentError, r"bias has shape \[3\]; expected \[2\]"),
    (dict(bias=FakeArray((1, 2))), fftconv.InvalidArgumentError, r"bias has shape \[1, 2\]; expected \[2\]"),
    (dict(bias=FakeArray((2,), device_type=1)), fftconv.InvalidArgumentError, "bias is in CPU memory"),
    (dict(bias=FakeArray((2,), device_id=1)), fftconv.InvalidArgumentError,
     "bias is on CUDA device 1, x on device 0"),
    (dict(bias=[0.0, 0.0]), fftconv.InvalidArgumentError, "bias is a list, which has no shape"),
])
def test_conv2d_refuses_operator_arguments_before_any_device_work(options, error, message):
    x, w = FakeArray((1, 6, 8, 8)), FakeArray((2, 6, 4, 4))
    with pytest.raises(error, match=message):
        fftconv.conv2d(x, w, **options)


def test_conv2d_takes_f_conv2d_arguments_in_its_order():
    # conv2d(x, w, bias, stride, padding, dilation, groups), as F.conv2d: the
    # bias's shape is checked against out_channels, stride refused, padding
    # and groups used (a wrong one is named).
    x, w = FakeArray((1, 6, 8, 8)), FakeArray((4, 3, 3, 3))
    with pytest.raises(fftconv.InvalidArgumentError, match=r"bias has shape \[3\]; expected \[4\]"):
        fftconv.conv2d(x, w, FakeArray((3,)), 1, 1, 1, 2)
    with pytest.raises(fftconv.InvalidArgumentError, match="stride = 2"):
        fftconv.conv2d(x, w, None, 2, 1, 1, 2)
    with pytest.raises(fftconv.InvalidArgumentError, match="w has 3 input channels .shape"):
        fftconv.conv2d(x, w, None, 1, 1, 1, 1)
    if no_gpu():  # everything right: the call reaches the device
        with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
            fftconv.conv2d(x, w, FakeArray((4,)), 1, "same", 1, 2)


def good_bias():
    return FakeCudaTensor((2,))


@pytest.mark.parametrize("bias, message", [
    (FakeCudaTensor((2,), dtype_bits=64), "bias has dtype float64; fftconv computes in float32"),
    (FakeCudaTensor((2,), dtype_code=0), "bias has dtype int32"),
    (FakeCudaTensor((1, 2)), r"bias has 2 dimensions; expected shape \[2\]"),
    (FakeCudaTensor((3,)), r"bias has shape \[3\]; expected \[2\]"),
    (FakeCudaTensor((2,), device_type=1), "bias is in CPU memory"),
    (FakeCudaTensor((2,), device_id=1), "bias is on CUDA device 1 but the input x is on CUDA device 0"),
    (FakeCudaTensor((2,), strides=(2,)), r"bias is not dense \(strides \[2\] elements for shape \[2\]\)"),
])
def test_native_checks_name_what_is_wrong_with_the_bias(bias, message):
    with pytest.raises(fftconv.InvalidArgumentError, match=message):
        native_conv2d(good_x(), good_w(), good_y(), bias)


def test_native_bias_must_be_none_or_a_capsule():
    x, w, y = good_x(), good_w(), good_y()  # alive while their capsules are read
    with pytest.raises(fftconv.InvalidArgumentError, match="bias is a int; expected None or a DLPack capsule"):
        fftconv._native.conv2d(fftconv.Problem(**PROBLEM), x.capsule(), w.capsule(), 5, y.capsule(), 0, 0)


OPERATOR = dict(batch=1, in_channels=4, out_channels=6, height=10, width=9, kernel=(3, 5), padding=(1, 2),
                groups=2)


@pytest.mark.parametrize("x, w, y, message", [
    (FakeCudaTensor((1, 4, 10, 9)), FakeCudaTensor((6, 4, 3, 5)), FakeCudaTensor((1, 6, 10, 9)),
     r"w has shape \[6, 4, 3, 5\]; expected \[6, 2, 3, 5\]"),
    (FakeCudaTensor((1, 4, 10, 9)), FakeCudaTensor((6, 2, 5, 3)), FakeCudaTensor((1, 6, 10, 9)),
     r"w has shape \[6, 2, 5, 3\]; expected \[6, 2, 3, 5\]"),
    (FakeCudaTensor((1, 4, 10, 9)), FakeCudaTensor((6, 2, 3, 5)), FakeCudaTensor((1, 6, 8, 5)),
     r"out has shape \[1, 6, 8, 5\]; expected \[1, 6, 10, 9\]"),
])
def test_native_shapes_follow_padding_groups_and_rectangular_kernels(x, w, y, message):
    with pytest.raises(fftconv.InvalidArgumentError, match=message):
        native_conv2d(x, w, y, FakeCudaTensor((6,)), problem=OPERATOR)


@pytest.mark.skipif(not no_gpu(), reason="a GPU is present: the call would reach the device with fake pointers")
def test_native_checks_pass_a_right_bias_and_operator():
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
        native_conv2d(FakeCudaTensor((1, 4, 10, 9)), FakeCudaTensor((6, 2, 3, 5)),
                      FakeCudaTensor((1, 6, 10, 9)), FakeCudaTensor((6,)), problem=OPERATOR)
    # An extent of 1 may carry any stride, a bias's too.
    with pytest.raises(fftconv.CudaError, match="no usable CUDA device"):
        native_conv2d(FakeCudaTensor((1, 3, 8, 8)), FakeCudaTensor((1, 3, 3, 3)), FakeCudaTensor((1, 1, 6, 6)),
                      FakeCudaTensor((1,), strides=(7,)), problem=dict(PROBLEM, out_channels=1))


# fftconv.torch.Conv2d without a GPU: what it computes by fftconv and what
# it leaves to PyTorch. Needs PyTorch (skipped without it).


def test_conv2d_module_padding_for_fftconv():
    torch = pytest.importorskip("torch")
    from fftconv.torch import Conv2d, same_padding
    assert same_padding((5, 4)) == ((2, 2), (1, 2))
    cases = [
        (dict(kernel_size=5), ((0, 0), None)),
        (dict(kernel_size=5, padding="valid"), ((0, 0), None)),
        (dict(kernel_size=(5, 3), padding="same"), ((2, 1), None)),
        (dict(kernel_size=(3, 5), padding=(1, 4)), ((1, 4), None)),
        # 'same' with an even extent: one more zero below (right), padded by the layer.
        (dict(kernel_size=(4, 3), padding="same"), ((0, 0), (1, 1, 1, 2))),
        (dict(kernel_size=3, padding=2, padding_mode="reflect"), ((0, 0), (2, 2, 2, 2))),
        (dict(kernel_size=3, padding=0, padding_mode="circular"), ((0, 0), None)),
    ]
    for arguments, expected in cases:
        assert Conv2d(4, 4, **arguments).fftconv_padding() == expected, arguments
    assert torch is not None


def test_conv2d_module_reasons_to_fall_back():
    torch = pytest.importorskip("torch")
    from fftconv.torch import Conv2d
    x = torch.zeros(1, 4, 16, 16)
    assert "stride=(2, 2)" in Conv2d(4, 4, 3, stride=2).unsupported_reason(x)
    assert "dilation=(1, 2)" in Conv2d(4, 4, 3, dilation=(1, 2)).unsupported_reason(x)
    assert "CPU tensor" in Conv2d(4, 4, 3, padding="same", groups=2).unsupported_reason(x)
    assert "2-dimensional" in Conv2d(4, 4, 3).unsupported_reason(torch.zeros(16, 16))


def test_conv2d_module_falls_back_on_the_cpu_with_the_same_result():
    torch = pytest.importorskip("torch")
    import warnings
    from fftconv.torch import Conv2d
    torch.manual_seed(0)
    for arguments in (dict(padding="same", groups=2), dict(padding=(1, 2), padding_mode="reflect"),
                      dict(padding="same", bias=False)):
        layer = Conv2d(4, 6, (3, 4) if arguments.get("bias") is False else (3, 5), **arguments)
        reference = torch.nn.Conv2d(4, 6, layer.kernel_size, **arguments)
        reference.load_state_dict(layer.state_dict())
        x = torch.randn(2, 4, 12, 11)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.testing.assert_close(layer(x), reference(x))


@pytest.mark.parametrize("arguments", [
    dict(kernel_size=(5, 3), padding="same"),
    dict(kernel_size=(3, 5), padding=(2, 1), groups=2),
    dict(kernel_size=4, padding="same", bias=False),                # even: padded by the layer
    dict(kernel_size=(4, 3), padding="same", groups=4),             # depthwise, even height
    dict(kernel_size=3, padding=(1, 2), padding_mode="reflect"),
    dict(kernel_size=(3, 5), padding=2, padding_mode="circular", groups=2),
    dict(kernel_size=5, padding="valid"),
    dict(kernel_size=3, padding=4),                                   # more padding than kernel
], ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()))
def test_conv2d_module_fftconv_path_plumbing(monkeypatch, arguments):
    """The path that runs fftconv, with fftconv.conv2d replaced by F.conv2d
    on the CPU: what the layer hands fftconv (padding, groups, bias, the
    explicit padding it applies first) and the problem it hands fftconv's
    gradients (replaced by torch.nn.grad on the CPU) give nn.Conv2d's
    results. The GPU tests run the real thing."""
    torch = pytest.importorskip("torch")
    import fftconv.torch as fftconv_torch
    calls = []
    patch_computations_with_the_cpu(monkeypatch, torch, fftconv_torch, calls)
    monkeypatch.setattr(fftconv_torch.Conv2d, "unsupported_reason", lambda self, input: None)
    torch.manual_seed(1)
    layer = fftconv_torch.Conv2d(4, 8, **arguments).double()
    reference = torch.nn.Conv2d(4, 8, **arguments).double()
    reference.load_state_dict(layer.state_dict())
    x = torch.randn(2, 4, 13, 11, dtype=torch.float64, requires_grad=True)
    x_reference = x.detach().clone().requires_grad_(True)
    y, y_reference = layer(x), reference(x_reference)
    torch.testing.assert_close(y, y_reference)
    assert calls and calls[-1]["groups"] == layer.groups and calls[-1]["bias"] == (layer.bias is not None)
    assert all(isinstance(p, int) for p in calls[-1]["padding"]) and len(calls[-1]["padding"]) == 2
    grad = torch.randn_like(y)
    y.backward(grad)
    y_reference.backward(grad)
    torch.testing.assert_close(x.grad, x_reference.grad)
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad)
    if layer.bias is not None:
        torch.testing.assert_close(layer.bias.grad, reference.bias.grad)
    with torch.no_grad():  # without autograd: the plain call
        torch.testing.assert_close(layer(x), y_reference)
    unbatched = layer(x[0].detach())
    torch.testing.assert_close(unbatched, y_reference[0].detach())


def patch_computations_with_the_cpu(monkeypatch, torch, fftconv_torch, calls):
    """fftconv.torch's operators with their device computations replaced by
    PyTorch's on the CPU (same arguments, same results): what the operators,
    their autograd and the layer hand fftconv can be checked without a GPU."""
    F = torch.nn.functional

    def conv2d_on_the_cpu(x, w, bias, padding, groups):
        assert isinstance(padding, list) and all(isinstance(p, int) for p in padding)
        calls.append(dict(padding=tuple(padding), groups=groups, bias=bias is not None))
        return F.conv2d(x, w, bias, padding=tuple(padding), groups=groups)

    def data_gradient_on_the_cpu(dy, w, padding, groups):
        return torch.nn.grad.conv2d_input(fftconv_torch._input_size(dy, w, padding, groups), w, dy,
                                          padding=tuple(padding), groups=groups)

    def filter_gradient_on_the_cpu(x, dy, weight_size, padding, groups, bias):
        dw = torch.nn.grad.conv2d_weight(x, tuple(weight_size), dy, padding=tuple(padding), groups=groups)
        return dw, dy.sum((0, 2, 3)) if bias else dy.new_empty(0)

    monkeypatch.setattr(fftconv_torch, "_compute_conv2d", conv2d_on_the_cpu)
    monkeypatch.setattr(fftconv_torch, "_compute_backward_data", data_gradient_on_the_cpu)
    monkeypatch.setattr(fftconv_torch, "_compute_backward_filter", filter_gradient_on_the_cpu)


@pytest.mark.parametrize("padding, groups, bias", [((2, 1), 1, True), ((1, 3), 2, False), ((0, 0), 4, True)])
def test_operators_are_twice_differentiable(monkeypatch, padding, groups, bias):
    """Issue 24.9: double backward (a gradient penalty) must not drop terms.
    The three operators' registered gradients (each other, and conv2d) pass
    gradcheck and gradgradcheck in float64, with the device computations
    replaced by PyTorch's on the CPU."""
    torch = pytest.importorskip("torch")
    import fftconv.torch as fftconv_torch
    patch_computations_with_the_cpu(monkeypatch, torch, fftconv_torch, [])
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(2, 4, 7, 6, dtype=torch.float64, generator=generator, requires_grad=True)
    w = torch.randn(4, 4 // groups, 3, 4, dtype=torch.float64, generator=generator, requires_grad=True)
    b = torch.randn(4, dtype=torch.float64, generator=generator, requires_grad=True) if bias else None
    inputs = (x, w) + ((b,) if bias else ())

    def forward(x, w, *b):
        return torch.ops.fftconv.conv2d(x, w, b[0] if b else None, list(padding), groups)

    assert torch.autograd.gradcheck(forward, inputs)
    assert torch.autograd.gradgradcheck(forward, inputs)
    y = forward(*inputs)
    dy = torch.randn(y.shape, dtype=torch.float64, generator=generator, requires_grad=True)
    assert torch.autograd.gradgradcheck(
        lambda dy, w: torch.ops.fftconv.conv2d_backward_data(dy, w, list(padding), groups), (dy, w))
    assert torch.autograd.gradgradcheck(
        lambda x, dy: torch.ops.fftconv.conv2d_backward_filter(x, dy, list(w.shape), list(padding), groups,
                                                                bias), (x, dy))


def test_mismatched_dtypes_are_refused_as_f_conv2d_refuses_them(monkeypatch):
    """Outside autocast fftconv.torch.conv2d and Conv2d want the input's
    dtype to be the weight's and the bias's, as F.conv2d does (RuntimeError
    'Input type (...) and weight type (...) should be the same');
    InvalidArgumentError is a RuntimeError. The operators take any mix."""
    torch = pytest.importorskip("torch")
    import fftconv.torch as fftconv_torch
    calls = []
    patch_computations_with_the_cpu(monkeypatch, torch, fftconv_torch, calls)
    monkeypatch.setattr(fftconv_torch, "_unsupported_reason", lambda *arguments: None)
    monkeypatch.setattr(fftconv_torch.Conv2d, "unsupported_reason", lambda self, input: None)
    x = torch.randn(1, 4, 12, 12, dtype=torch.bfloat16)
    w, b = torch.randn(4, 4, 3, 3), torch.randn(4)
    with pytest.raises(RuntimeError, match=r"input type \(torch.bfloat16\) and weight type \(torch.float32\) "
                                           "should be the same") as raised:
        fftconv_torch.conv2d(x, w, b, 1, 1)
    assert isinstance(raised.value, fftconv.InvalidArgumentError)
    with pytest.raises(fftconv.InvalidArgumentError,
                       match=r"input type \(torch.bfloat16\) and bias type \(torch.float32\) should be the same"):
        fftconv_torch.conv2d(x, w.bfloat16(), b, 1, 1)
    layer = fftconv_torch.Conv2d(4, 4, 3, padding=1)
    with pytest.raises(fftconv.InvalidArgumentError, match="and weight type .torch.float32. should be the same"):
        layer(x)
    assert not calls  # refused before the operator
    assert fftconv_torch.conv2d(x, w.bfloat16(), b.bfloat16(), 1, 1).dtype == torch.bfloat16
    assert fftconv_torch.conv2d(x.float(), w, None, 1, 1).dtype == torch.float32


def test_fake_kernels_give_eager_dtypes():
    """The meta (fake) kernels torch.compile traces with: y in x's dtype, dx
    in dy's, dw and dbias in x's, whatever w's dtype (float32 or half)."""
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode
    import fftconv.torch  # noqa: F401 - registers the operators
    ops = torch.ops.fftconv
    with FakeTensorMode():
        check_fake_kernel_dtypes(torch, ops)


def check_fake_kernel_dtypes(torch, ops):
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        x = torch.empty(2, 4, 20, 18, dtype=dtype)
        dy = torch.empty(2, 4, 20, 18, dtype=dtype)
        for w_dtype in (torch.float32, dtype):
            w = torch.empty(4, 1, 7, 5, dtype=w_dtype)
            y = ops.conv2d(x, w, None, [3, 2], 4)
            assert (y.dtype, tuple(y.shape)) == (dtype, (2, 4, 20, 18))
            assert ops.conv2d(x.to(memory_format=torch.channels_last), w, None, [3, 2], 4).is_contiguous(
                memory_format=torch.channels_last)
            dx = ops.conv2d_backward_data(dy, w, [3, 2], 4)
            assert (dx.dtype, tuple(dx.shape)) == (dtype, (2, 4, 20, 18))
        dw, db = ops.conv2d_backward_filter(x, dy, [4, 1, 7, 5], [3, 2], 4, True)
        assert (dw.dtype, db.dtype, tuple(dw.shape), tuple(db.shape)) == (dtype, dtype, (4, 1, 7, 5), (4,))


def test_half_activations_stay_half_and_filters_become_float32():
    torch = pytest.importorskip("torch")
    import fftconv.torch as fftconv_torch
    x = torch.randn(2, 4, 6, 5, dtype=torch.bfloat16)
    assert fftconv_torch._dense(x) is x
    for variant in (x.to(memory_format=torch.channels_last), x.transpose(2, 3), x[..., ::2]):
        dense = fftconv_torch._dense(variant)
        assert dense.dtype == torch.bfloat16 and dense.is_contiguous() and torch.equal(dense, variant)
        as_float = fftconv_torch._dense_float(variant)
        assert as_float.dtype == torch.float32 and as_float.is_contiguous()
        assert torch.equal(as_float, variant.float())
    w = torch.randn(4, 4, 3, 3)
    assert fftconv_torch._dense_float(w) is w


def test_fallback_warnings_point_at_the_callers_line():
    torch = pytest.importorskip("torch")
    import sys
    import warnings
    import fftconv.torch as fftconv_torch
    layer = fftconv_torch.Conv2d(2, 3, 5, stride=2)
    x = torch.randn(1, 2, 12, 12)
    fftconv_torch._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        layer(x)
    caught = [c for c in caught if "fftconv" in str(c.message)]
    assert [(c.filename, c.lineno) for c in caught] == [(__file__, line)], [str(c.message) for c in caught]


def test_convert_swaps_large_kernel_layers_keeping_their_parameters():
    torch = pytest.importorskip("torch")
    import sys
    import warnings
    import fftconv.torch as fftconv_torch
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.large = nn.Conv2d(8, 8, 31, padding=15, groups=8)
            self.act = nn.GELU()
            self.pointwise = nn.Conv2d(8, 8, 1)
            self.strided = nn.Conv2d(8, 8, 9, stride=2)
            self.small = nn.Conv2d(8, 8, 3, padding=1)
            self.rectangular = nn.Conv2d(8, 8, (1, 13), padding=(0, 6))

    model = Block()
    state = {k: v.clone() for k, v in model.state_dict().items()}
    weight = model.large.weight
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        converted = fftconv_torch.convert(model)
    assert converted is model
    assert type(model.large) is fftconv_torch.Conv2d and model.large.weight is weight
    assert type(model.rectangular) is fftconv_torch.Conv2d
    assert type(model.pointwise) is nn.Conv2d and type(model.small) is nn.Conv2d
    assert type(model.strided) is nn.Conv2d
    caught = [c for c in caught if "fftconv" in str(c.message)]
    assert [(c.filename, c.lineno) for c in caught] == [(__file__, line)]
    assert "strided" in str(caught[0].message)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())
    model2 = fftconv_torch.convert(Block(), min_kernel_size=3, warn=False)
    assert type(model2.small) is fftconv_torch.Conv2d and type(model2.pointwise) is nn.Conv2d


def test_context_cache_and_workspace_settings_need_no_gpu():
    saved = fftconv.context_cache_size()
    assert saved == 8
    fftconv.set_context_cache_size(3)
    assert fftconv.context_cache_size() == 3
    fftconv.set_context_cache_size(saved)
    with pytest.raises(fftconv.InvalidArgumentError, match="at least 1"):
        fftconv.set_context_cache_size(0)
    fftconv.set_workspace_limit(1 << 20, device=0)
    assert fftconv.workspace_limit(device=0) == 1 << 20
    fftconv.set_workspace_limit(None, device=0)
    assert fftconv.workspace_limit(device=0) is None
    with pytest.raises(fftconv.InvalidArgumentError, match="negative"):
        fftconv.set_workspace_limit(-1, device=0)
    fftconv.release()  # nothing cached: nothing to wait for
    assert callable(fftconv.reserve)
