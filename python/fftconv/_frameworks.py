"""What fftconv needs to know about an array from some framework: its shape,
CUDA device, current stream, how to make it contiguous, how to allocate an
output like it, and how to hand it over (DLPack). PyTorch and CuPy arrays
are recognised by their type's module, without importing either; anything
else that speaks DLPack (JAX, ...) takes the generic path, whose outputs
fftconv allocates itself (fftconv.DeviceArray, itself a DLPack producer)."""
import sys

from . import _native
from ._errors import invalid_argument

# DLPack's device types (dlpack.h: DLDeviceType).
_DLPACK_CUDA = 2
_DLPACK_CUDA_MANAGED = 13
_DLPACK_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA pinned host", 4: "OpenCL", 7: "Vulkan",
                        8: "Metal", 10: "ROCm", 11: "ROCm pinned host", 13: "CUDA managed"}


def framework_of(array):
    """'torch', 'cupy', 'jax' or 'dlpack' (any other DLPack producer)."""
    root = type(array).__module__.split(".")[0]
    if root in ("torch", "cupy"):
        return root
    if root in ("jax", "jaxlib"):
        return "jax"
    return "dlpack"


def shape_of(array, name):
    shape = getattr(array, "shape", None)
    if shape is None:
        raise invalid_argument(f"{name} is a {type(array).__name__}, which has no shape; "
                               "pass a CUDA tensor (PyTorch, CuPy, JAX or any DLPack producer)")
    return tuple(int(extent) for extent in shape)


def cuda_device(array, name):
    """The CUDA device id of `array`, from the DLPack protocol."""
    device_of = getattr(array, "__dlpack_device__", None)
    if device_of is None:
        raise invalid_argument(f"{name} is a {type(array).__name__}, which does not support DLPack "
                               "(__dlpack_device__); pass a CUDA tensor (PyTorch, CuPy, JAX, ...)")
    device_type, device_id = device_of()
    device_type = int(device_type)
    if device_type not in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        where = _DLPACK_DEVICE_NAMES.get(device_type, "non-CUDA")
        raise invalid_argument(f"{name} is in {where} memory (DLPack device type {device_type}); "
                               "fftconv needs CUDA device memory")
    return int(device_id)


def stream_handle(stream):
    """A cudaStream_t as an int, from an int, a torch.cuda.Stream
    (.cuda_stream) or a cupy.cuda.Stream (.ptr)."""
    if isinstance(stream, int):
        return stream
    for attribute in ("cuda_stream", "ptr"):
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int):
            return handle
    raise invalid_argument(f"stream is a {type(stream).__name__}; pass a cudaStream_t as an int, "
                           "a torch.cuda.Stream or a cupy.cuda.Stream")


def current_stream(framework, device):
    """The producer's current stream on `device`: where its pending work on
    the inputs is, and where the caller expects the result. Other producers:
    the legacy default stream (0), which the DLPack export orders after
    their work."""
    if framework == "torch":
        return sys.modules["torch"].cuda.current_stream(device).cuda_stream
    if framework == "cupy":
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            return cupy.cuda.get_current_stream().ptr
    return 0


def contiguous(array, framework, stream=None):
    """A dense NCHW version of `array` (a copy only when it is not dense).
    PyTorch tensors are detached: fftconv.conv2d is not differentiable
    (fftconv.torch.conv2d is).

    A copy is made on `stream` (the stream fftconv will read it on; None:
    the current one), after the producer's current stream's work: the
    producer's stream-ordered allocator then keeps its memory for that
    stream, so it is not handed to other work on the current stream while
    fftconv still reads it there."""
    if framework == "torch":
        array = array.detach()
        if array.is_contiguous():
            return array
        torch = sys.modules["torch"]
        current = torch.cuda.current_stream(array.device)
        if stream is None or stream == current.cuda_stream:
            return array.contiguous()
        target = torch.cuda.ExternalStream(stream, device=array.device)
        target.wait_stream(current)
        with torch.cuda.stream(target):
            copy = array.contiguous()
        return copy
    if framework == "cupy":
        cupy = sys.modules["cupy"]
        if array.flags.c_contiguous:
            return array
        with cupy.cuda.Device(array.device.id):
            current = cupy.cuda.get_current_stream()
            if stream is None or stream == current.ptr:
                return cupy.ascontiguousarray(array)
            target = cupy.cuda.ExternalStream(stream)
            target.wait_event(current.record())
            with target:
                return cupy.ascontiguousarray(array)
    return array  # other producers: the native check names a non-dense layout


# Set by fftconv.torch on import: installs PyTorch's caching allocator as a
# device's workspace allocator (called before fftconv works on torch tensors).
torch_allocator_hook = None

# The last stream of each device that a PyTorch call ran on outside a
# capture: the context a capture borrows first.
_last_stream = {}


def on_capture_safe_stream(framework, device, stream, call):
    """call(stream), except during a PyTorch CUDA graph capture on a stream
    that has no fftconv context: making one allocates, which a capture
    forbids. Then the call runs on the stream of the device's most recently
    used context (the one PyTorch's warm-up on a side stream made and sized),
    forked from the capture and joined back with events, so that both
    streams' work is in the graph. Without such a context the native call
    refuses, saying what to do."""
    if framework != "torch" or stream == 0 or _native.has_context(device, stream) or \
            not _native.is_capturing(stream):
        if framework == "torch" and stream != 0:
            _last_stream[device] = stream
        return call(stream)
    borrowed = _last_stream.get(device, 0)
    if borrowed == stream or not _native.has_context(device, borrowed):
        borrowed = _native.borrowable_stream(device)
    if borrowed == 0:
        cached = ", ".join(f"stream 0x{s:x}" + (" (being captured)" if capturing else "") + (" (pinned)" if pinned else "")
                           for s, capturing, pinned in _native.cached_streams(device)) or "none"
        raise invalid_argument(
            f"stream 0x{stream:x} on CUDA device {device} is being captured into a CUDA graph and has no "
            "fftconv context, and making one allocates: run the captured calls once before capturing "
            "(PyTorch: the warm-up iterations on a side stream), or call fftconv.reserve(...) for each "
            f"problem on the stream you capture on. Contexts on this device: {cached}")
    torch = sys.modules["torch"]
    capture = torch.cuda.ExternalStream(stream, device=torch.device("cuda", device))
    side = torch.cuda.ExternalStream(borrowed, device=torch.device("cuda", device))
    side.wait_stream(capture)
    try:
        return call(borrowed)
    finally:
        capture.wait_stream(side)


_ACTIVATION_DTYPES = ("float32", "bfloat16", "float16")


def activation_dtype(like):
    """The output's dtype for an input `like`: its own when fftconv writes it
    (float32, bfloat16, float16), else float32 (the native checks then name
    the input's dtype). Names as numpy, JAX (ml_dtypes) and torch spell them."""
    name = str(getattr(like, "dtype", "float32")).rsplit(".", 1)[-1]
    return name if name in _ACTIVATION_DTYPES else "float32"


def allocate(framework, like, shape, device, stream):
    """An uninitialised CUDA array of `shape` for the output, of the input
    `like`'s dtype (float32, bfloat16 or float16: fftconv writes y in x's),
    made by the input's framework where fftconv can ask it; None where it
    cannot: the native call then allocates a DeviceArray of x's dtype (read
    from x's DLPack tensor), and returns it."""
    dtype = activation_dtype(like)
    if framework == "torch":
        torch = sys.modules["torch"]
        torch_dtype = getattr(torch, dtype)
        # Allocated on the stream that will write it: the caching allocator
        # is stream-ordered.
        if stream == torch.cuda.current_stream(device).cuda_stream:
            return torch.empty(shape, dtype=torch_dtype, device=like.device)
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=like.device)):
            return torch.empty(shape, dtype=torch_dtype, device=like.device)
    if framework == "cupy" and dtype != "bfloat16":  # CuPy has no bfloat16
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(device):
            if stream == cupy.cuda.get_current_stream().ptr:
                return cupy.empty(shape, dtype=dtype)
            with cupy.cuda.ExternalStream(stream):
                return cupy.empty(shape, dtype=dtype)
    return None


def export(array, stream):
    """A DLPack capsule of `array`, its producer told that fftconv reads or
    writes it on `stream` (so the producer orders its own work before)."""
    exporter = getattr(array, "__dlpack__", None)
    if exporter is None:
        raise invalid_argument(f"a {type(array).__name__} does not support DLPack (__dlpack__)")
    # DLPack numbers the legacy default stream 1 (0 is not allowed).
    return exporter(stream=stream if stream != 0 else 1)


def wrap_output(framework, array):
    """What conv2d returns for an output fftconv allocated: JAX gets a JAX
    array (taken over through DLPack, no copy); others get the array."""
    if framework == "jax" and isinstance(array, _native.DeviceArray):
        return sys.modules["jax"].numpy.from_dlpack(array)
    return array
