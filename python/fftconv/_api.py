"""fftconv's Python API: conv2d, transform_filter, plan, workspace_size.

The operator is torch.nn.functional.conv2d(x, w, bias, stride=1,
padding=padding, dilation=1, groups=groups): the arguments are PyTorch's,
and stride and dilation are taken only as 1 (anything else raises
InvalidArgumentError naming them, as the library's validation does)."""
import operator
import sys

from . import _frameworks as frameworks
from . import _native
from ._errors import invalid_argument

Problem = _native.Problem
Plan = _native.Plan
FilterSpectrum = _native.FilterSpectrum
DeviceArray = _native.DeviceArray


def _require_one(value, name, what):
    """Refuses a stride or dilation (an int or a pair, as PyTorch takes
    them) other than 1, naming it."""
    pair = isinstance(value, (tuple, list))
    try:
        values = tuple(operator.index(v) for v in value) if pair else (operator.index(value),)
    except TypeError:
        raise TypeError(f"fftconv: {name} must be an int or a (height, width) pair, "
                        f"not {type(value).__name__} ({value!r})") from None
    if pair and len(values) != 2:
        raise invalid_argument(f"{name} = {value!r} has {len(values)} values; "
                               "expected one int or a (height, width) pair")
    if any(v != 1 for v in values):
        raise invalid_argument(f"{name} = {value!r} is not supported: fftconv computes {what} "
                               f"convolutions only ({name} must be 1)")


def _groups(groups):
    if isinstance(groups, bool):
        raise TypeError(f"fftconv: groups must be an int, not bool ({groups!r})")
    try:
        groups = operator.index(groups)
    except TypeError:
        raise TypeError(f"fftconv: groups must be an int, not {type(groups).__name__} ({groups!r})") from None
    if groups < 1:
        raise invalid_argument(f"groups = {groups} must be at least 1")
    return groups


def problem_for(input_shape, filter_shape, *, padding=0, groups=1, stride=1, dilation=1):
    """The Problem for an input of `input_shape` (batch, in_channels, height,
    width) and a filter of `filter_shape` (out_channels, in_channels / groups,
    kernel_height, kernel_width), with PyTorch's padding (an int, a (height,
    width) pair, 'valid' or 'same'), groups, stride and dilation (1 only),
    validated: raises InvalidArgumentError naming what does not fit."""
    _require_one(stride, "stride", "stride-1")
    _require_one(dilation, "dilation", "undilated")
    groups = _groups(groups)
    input_shape = tuple(int(extent) for extent in input_shape)
    filter_shape = tuple(int(extent) for extent in filter_shape)
    if len(input_shape) != 4:
        raise invalid_argument(f"x has shape {list(input_shape)}; expected 4 dimensions "
                               "(batch, in_channels, height, width)")
    if len(filter_shape) != 4:
        raise invalid_argument(f"w has shape {list(filter_shape)}; expected 4 dimensions "
                               "(out_channels, in_channels / groups, kernel_height, kernel_width)")
    batch, in_channels, height, width = input_shape
    out_channels, group_in_channels, kernel_height, kernel_width = filter_shape
    if group_in_channels * groups != in_channels:
        if groups == 1:
            raise invalid_argument(f"w has {group_in_channels} input channels (shape {list(filter_shape)}) "
                                   f"but x has {in_channels} (shape {list(input_shape)})")
        raise invalid_argument(f"w has {group_in_channels} input channels per group (shape {list(filter_shape)}), "
                               f"so with groups = {groups} x needs {group_in_channels * groups}, "
                               f"but x has {in_channels} (shape {list(input_shape)})")
    if out_channels % groups != 0:
        raise invalid_argument(f"w has {out_channels} output channels (shape {list(filter_shape)}), "
                               f"which groups = {groups} does not divide")
    problem = Problem(batch=batch, in_channels=in_channels, out_channels=out_channels, height=height,
                      width=width, kernel=(kernel_height, kernel_width), padding=padding, groups=groups)
    problem.validate()
    return problem


def _as_problem(x_or_problem, w, padding, groups):
    if isinstance(x_or_problem, Problem):
        if w is not None or padding is not None or groups is not None:
            raise invalid_argument("pass either a Problem (which has its own padding and groups) "
                                   "or the input and the filter, not both")
        x_or_problem.validate()
        return x_or_problem
    if w is None:
        raise invalid_argument("pass a Problem, or the input and the filter (tensors or shapes)")
    shape = lambda a, name: tuple(a) if isinstance(a, (tuple, list)) else frameworks.shape_of(a, name)
    return problem_for(shape(x_or_problem, "x"), shape(w, "w"), padding=0 if padding is None else padding,
                       groups=1 if groups is None else groups)


def plan(x, w=None, *, padding=None, groups=None):
    """Which path fftconv takes for a problem: plan(problem), or plan(x, w,
    padding=0, groups=1) with tensors or shapes. Needs no GPU."""
    return _native.plan(_as_problem(x, w, padding, groups))


def workspace_size(x, w=None, *, padding=None, groups=None, device=0):
    """Device bytes fftconv's workspace needs for the problem on `device`:
    workspace_size(problem) or workspace_size(x, w, padding=0, groups=1)."""
    return _native.workspace_size(_as_problem(x, w, padding, groups), device)


def _resolve_stream(stream, framework, device):
    if stream is None:
        return frameworks.current_stream(framework, device)
    return frameworks.stream_handle(stream)


def conv2d(x, w, bias=None, stride=1, padding=None, dilation=1, groups=None, *, out=None, stream=None):
    """y = torch.nn.functional.conv2d(x, w, bias, stride, padding, dilation,
    groups), computed by fftconv. The arguments are F.conv2d's, in its order.

    x: float32, bfloat16 or float16 CUDA tensor (batch, in_channels, height,
       width), from PyTorch, CuPy, JAX or any DLPack producer. Half inputs
       are read by the kernels directly and widened exactly; fftconv
       computes in FP32 and rounds each output once.
    w: float32 CUDA tensor (out_channels, in_channels / groups, kernel_height,
       kernel_width), whatever x's dtype, or a FilterSpectrum from
       transform_filter (inference: transform once).
    bias: None, or a float32 CUDA tensor (out_channels,) added to each output
       channel.
    stride, dilation: 1 (an int or a pair); anything else raises
       InvalidArgumentError naming it.
    padding: zeros on each side: an int, (height, width), 'valid' (0) or
       'same' ((k - 1) // 2 for odd kernel extents; an even extent raises
       InvalidArgumentError: 'same' would pad one side more). Default 0, or
       with a FilterSpectrum the padding it was made for.
    groups: in_channels and out_channels are split into `groups` groups, each
       output group seeing only its input group (in_channels = groups:
       depthwise). Default 1, or a FilterSpectrum's.
    out: optional CUDA tensor of x's dtype (batch, out_channels, out_height,
       out_width) with out_height = height + 2 * padding_height -
       kernel_height + 1 (the same for the width), dense, written in place.
    stream: where the call runs; default: the producer's current stream
       (torch.cuda.current_stream(), CuPy's current stream; the legacy
       default stream for others). The call is asynchronous on it.

    Returns out, or a new tensor of x's framework and dtype
    (fftconv.DeviceArray for producers it cannot allocate with; a JAX array
    for JAX). Non-dense PyTorch/CuPy inputs are copied to dense ones first;
    `out` must be dense. Not differentiable: fftconv.torch.Conv2d is. Raises
    fftconv.Error subclasses carrying fftconv's message; nothing is written
    then."""
    spectrum = w if isinstance(w, FilterSpectrum) else None
    input_shape = frameworks.shape_of(x, "x")
    if spectrum is not None:
        made_for = spectrum.problem
        filter_shape = tuple(made_for.filter_shape)
        problem = problem_for(input_shape, filter_shape,
                              padding=made_for.padding if padding is None else padding,
                              groups=made_for.groups if groups is None else groups,
                              stride=stride, dilation=dilation)
        if (problem.padding, problem.groups) != (made_for.padding, made_for.groups):
            raise invalid_argument(f"w is a FilterSpectrum made for padding={made_for.padding}, "
                                   f"groups={made_for.groups}, but this call asks for "
                                   f"padding={problem.padding}, groups={problem.groups}: pass what "
                                   "transform_filter was given, or leave them out")
    else:
        filter_shape = frameworks.shape_of(w, "w")
        problem = problem_for(input_shape, filter_shape, padding=0 if padding is None else padding,
                              groups=1 if groups is None else groups, stride=stride, dilation=dilation)
    if bias is not None and frameworks.shape_of(bias, "bias") != (problem.out_channels,):
        raise invalid_argument(f"bias has shape {list(frameworks.shape_of(bias, 'bias'))}; "
                               f"expected [{problem.out_channels}]")
    framework = frameworks.framework_of(x)
    device = frameworks.cuda_device(x, "x")
    # Every tensor on x's device, named before anything is exported (a CPU
    # tensor's exporter must not be given a CUDA stream).
    for tensor, name in ((None if spectrum else w, "w"), (bias, "bias"), (out, "out")):
        if tensor is not None and frameworks.cuda_device(tensor, name) != device:
            raise invalid_argument(f"{name} is on CUDA device {frameworks.cuda_device(tensor, name)}, "
                                   f"x on device {device}")
    _native.require_device(device)
    handle = _resolve_stream(stream, framework, device)
    _prepare(framework, device)

    # Copies of non-dense inputs are made on the stream fftconv reads them on.
    x = frameworks.contiguous(x, framework, handle)
    if spectrum is None:
        w = frameworks.contiguous(w, frameworks.framework_of(w), handle)
    if bias is not None:
        bias = frameworks.contiguous(bias, frameworks.framework_of(bias), handle)
    if out is None:
        result = frameworks.allocate(framework, x, tuple(problem.output_shape), device, handle)
    else:
        if frameworks.shape_of(out, "out") != tuple(problem.output_shape):
            raise invalid_argument(f"out has shape {list(frameworks.shape_of(out, 'out'))}; "
                                   f"expected {list(problem.output_shape)}")
        result = out

    def call(stream):
        # None: the native call allocates a DeviceArray of x's dtype and returns it.
        out_argument = result if result is None or isinstance(result, DeviceArray) else \
            frameworks.export(result, stream)
        bias_argument = None if bias is None else frameworks.export(bias, stream)
        if spectrum is not None:
            return _native.conv2d_with_spectrum(problem, frameworks.export(x, stream), spectrum, bias_argument,
                                                out_argument, device, stream)
        return _native.conv2d(problem, frameworks.export(x, stream), frameworks.export(w, stream), bias_argument,
                              out_argument, device, stream)

    written = frameworks.on_capture_safe_stream(framework, device, handle, call)
    if out is not None:
        return out
    return frameworks.wrap_output(framework, written if result is None else result)


def transform_filter(w, input_shape, *, padding=0, groups=1, stream=None):
    """The filter's spectrum for inputs of `input_shape` (batch, in_channels,
    height, width; the tile extent depends on it) and the padding and groups
    it will be used with, computed once: pass it as w to conv2d for every
    input of that shape (conv2d takes the padding and groups from it). It
    lives on w's device; use it on the stream it was made on, or synchronise
    first."""
    filter_shape = frameworks.shape_of(w, "w")
    problem = problem_for(input_shape, filter_shape, padding=padding, groups=groups)
    framework = frameworks.framework_of(w)
    device = frameworks.cuda_device(w, "w")
    _native.require_device(device)
    handle = _resolve_stream(stream, framework, device)
    _prepare(framework, device)
    w = frameworks.contiguous(w, framework, handle)
    return _native.transform_filter(problem, frameworks.export(w, handle), device, handle)


def _prepare(framework, device):
    """Before fftconv works on `framework`'s arrays on `device`: PyTorch's
    caching allocator becomes the device's workspace allocator once
    fftconv.torch is imported (see fftconv.torch.use_caching_allocator)."""
    if framework == "torch" and frameworks.torch_allocator_hook is not None:
        frameworks.torch_allocator_hook(device)


def _device_and_stream(device, stream, like=None):
    """(device, stream handle) for the resource calls: `device` (default:
    like's, else PyTorch's current device when PyTorch is loaded, else 0) and
    `stream` (default: that framework's current stream there)."""
    framework = frameworks.framework_of(like) if like is not None else None
    if device is None:
        if like is not None and hasattr(like, "__dlpack_device__"):
            device = frameworks.cuda_device(like, "x")
        else:
            torch = sys.modules.get("torch")
            device = torch.cuda.current_device() if torch is not None and torch.cuda.is_available() else 0
    if stream is not None:
        return device, frameworks.stream_handle(stream)
    if framework is None:
        framework = "torch" if "torch" in sys.modules else "dlpack"
    return device, frameworks.current_stream(framework, device)


def reserve(x, w=None, *, padding=None, groups=None, backward=False, device=None, stream=None):
    """Makes the cuFFT plans and grows the workspace of the context fftconv
    uses on (device, stream) for the problem — reserve(problem) or
    reserve(x, w, padding=0, groups=1) with tensors or shapes; backward=True
    also for its two gradients — so that later calls on it allocate nothing:
    what a CUDA graph capture needs. device: x's (tensors), else PyTorch's
    current device; stream: the framework's current stream there.

    With PyTorch you rarely need it: a call captured on a stream without a
    context of its own runs on the context that the warm-up (PyTorch's
    documented iterations on a side stream) made and sized. Call it for the
    stream you will capture on (torch.cuda.graph(g, stream=s)) when the
    warm-up ran elsewhere, or to size the workspace up front."""
    problem = _as_problem(x, w, padding, groups)
    like = x if not isinstance(x, (Problem, tuple, list)) else None
    device, handle = _device_and_stream(device, stream, like)
    _native.require_device(device)
    _prepare("torch" if "torch" in sys.modules and (like is None or frameworks.framework_of(like) == "torch")
             else "dlpack", device)
    _native.reserve(problem, device, handle, bool(backward))


def set_workspace_limit(nbytes, *, device=None):
    """The most device memory (bytes) each fftconv context of `device`
    (default: PyTorch's current device, else 0) may take for its workspace,
    now and for contexts made later; None: no limit but free memory (the
    default). Problems that need more run in passes that fit, with the
    same results. A workspace already larger is kept until release()."""
    device, _ = _device_and_stream(device, 0)
    if nbytes is None:
        nbytes = 2 ** 64 - 1
    nbytes = operator.index(nbytes)
    if nbytes < 0:
        raise invalid_argument(f"set_workspace_limit: {nbytes} bytes is negative")
    _native.set_workspace_limit(device, nbytes)


def workspace_limit(*, device=None):
    """The workspace limit of `device` set by set_workspace_limit (None: no limit)."""
    device, _ = _device_and_stream(device, 0)
    limit = _native.workspace_limit(device)
    return None if limit == 2 ** 64 - 1 else limit


def release(*, device=None):
    """Waits for fftconv's work and frees the workspaces and cuFFT plans of
    every cached context of `device` (default: all devices); the contexts
    stay, and allocate again on their next call. CUDA graphs captured from
    them become invalid. fftconv.clear_cache() destroys the contexts too."""
    _native.release(-1 if device is None else operator.index(device))


def set_context_cache_size(contexts):
    """How many fftconv contexts (each: cuBLAS handle, cuFFT plans,
    workspace, a stream) are kept per device, one per stream used (default
    8): beyond it the least recently used one is freed (after its work),
    except those used in a CUDA graph capture, kept while the graph may run."""
    _native.set_context_cache_capacity(operator.index(contexts))


def context_cache_size():
    return _native.context_cache_capacity()
