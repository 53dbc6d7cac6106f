"""fftconv's Python API: conv2d, transform_filter, plan, workspace_size."""
from . import _frameworks as frameworks
from . import _native
from ._errors import invalid_argument

Problem = _native.Problem
Plan = _native.Plan
FilterSpectrum = _native.FilterSpectrum
DeviceArray = _native.DeviceArray


def problem_for(input_shape, filter_shape):
    """The Problem for an input of `input_shape` (batch, in_channels, height,
    width) and a filter of `filter_shape` (out_channels, in_channels, K, K),
    validated: raises InvalidArgumentError naming what does not fit."""
    input_shape = tuple(int(extent) for extent in input_shape)
    filter_shape = tuple(int(extent) for extent in filter_shape)
    if len(input_shape) != 4:
        raise invalid_argument(f"x has shape {list(input_shape)}; expected 4 dimensions "
                               "(batch, in_channels, height, width)")
    if len(filter_shape) != 4:
        raise invalid_argument(f"w has shape {list(filter_shape)}; expected 4 dimensions "
                               "(out_channels, in_channels, kernel_extent, kernel_extent)")
    if filter_shape[2] != filter_shape[3]:
        raise invalid_argument(f"w has shape {list(filter_shape)}: fftconv takes square kernels only "
                               f"({filter_shape[2]} x {filter_shape[3]} given)")
    if filter_shape[1] != input_shape[1]:
        raise invalid_argument(f"w has {filter_shape[1]} input channels (shape {list(filter_shape)}) "
                               f"but x has {input_shape[1]} (shape {list(input_shape)})")
    batch, in_channels, height, width = input_shape
    problem = Problem(batch=batch, in_channels=in_channels, out_channels=filter_shape[0],
                      height=height, width=width, kernel_extent=filter_shape[2])
    problem.validate()
    return problem


def _as_problem(x_or_problem, w=None):
    if isinstance(x_or_problem, Problem):
        x_or_problem.validate()
        return x_or_problem
    if w is None:
        raise invalid_argument("pass a Problem, or the input and the filter (tensors or shapes)")
    shape = lambda a, name: tuple(a) if isinstance(a, (tuple, list)) else frameworks.shape_of(a, name)
    return problem_for(shape(x_or_problem, "x"), shape(w, "w"))


def plan(x, w=None):
    """Which path fftconv takes for a problem: plan(problem), or plan(x, w)
    with tensors or shapes. Needs no GPU."""
    return _native.plan(_as_problem(x, w))


def workspace_size(x, w=None, *, device=0):
    """Device bytes fftconv's workspace needs for the problem on `device`."""
    return _native.workspace_size(_as_problem(x, w), device)


def _resolve_stream(stream, framework, device):
    if stream is None:
        return frameworks.current_stream(framework, device)
    return frameworks.stream_handle(stream)


def conv2d(x, w, out=None, *, stream=None):
    """y = conv2d(x, w): PyTorch's F.conv2d(x, w) (stride 1, no padding, no
    dilation, groups 1, no bias), computed by fftconv.

    x: float32 CUDA tensor (batch, in_channels, height, width), from PyTorch,
       CuPy, JAX or any DLPack producer.
    w: float32 CUDA tensor (out_channels, in_channels, K, K), or a
       FilterSpectrum from transform_filter (inference: transform once).
    out: optional float32 CUDA tensor (batch, out_channels, height-K+1,
       width-K+1), dense, written in place.
    stream: where the call runs; default: the producer's current stream
       (torch.cuda.current_stream(), CuPy's current stream; the legacy
       default stream for others). The call is asynchronous on it.

    Returns out, or a new tensor of x's framework (fftconv.DeviceArray for
    producers it cannot allocate with; a JAX array for JAX). Non-dense
    PyTorch/CuPy inputs are copied to dense ones first; `out` must be dense.
    Not differentiable: fftconv.torch.Conv2d is. Raises fftconv.Error
    subclasses carrying fftconv's message; nothing is written then."""
    spectrum = w if isinstance(w, FilterSpectrum) else None
    input_shape = frameworks.shape_of(x, "x")
    filter_shape = tuple(spectrum.problem.filter_shape) if spectrum else frameworks.shape_of(w, "w")
    problem = problem_for(input_shape, filter_shape)
    framework = frameworks.framework_of(x)
    device = frameworks.cuda_device(x, "x")
    # Every tensor on x's device, named before anything is exported (a CPU
    # tensor's exporter must not be given a CUDA stream).
    for tensor, name in ((None if spectrum else w, "w"), (out, "out")):
        if tensor is not None and frameworks.cuda_device(tensor, name) != device:
            raise invalid_argument(f"{name} is on CUDA device {frameworks.cuda_device(tensor, name)}, "
                                   f"x on device {device}")
    _native.require_device(device)
    handle = _resolve_stream(stream, framework, device)

    x = frameworks.contiguous(x, framework)
    if spectrum is None:
        w = frameworks.contiguous(w, frameworks.framework_of(w))
    if out is None:
        result = frameworks.allocate(framework, x, tuple(problem.output_shape), device, handle)
    else:
        if frameworks.shape_of(out, "out") != tuple(problem.output_shape):
            raise invalid_argument(f"out has shape {list(frameworks.shape_of(out, 'out'))}; "
                                   f"expected {list(problem.output_shape)}")
        result = out
    out_argument = result if isinstance(result, DeviceArray) else frameworks.export(result, handle)
    if spectrum is not None:
        _native.conv2d_with_spectrum(problem, frameworks.export(x, handle), spectrum, out_argument,
                                     device, handle)
    else:
        _native.conv2d(problem, frameworks.export(x, handle), frameworks.export(w, handle), out_argument,
                       device, handle)
    return result if out is not None else frameworks.wrap_output(framework, result)


def transform_filter(w, input_shape, *, stream=None):
    """The filter's spectrum for inputs of `input_shape` (batch, in_channels,
    height, width; the tile extent depends on it), computed once: pass it as
    w to conv2d for every input of that shape. It lives on w's device; use it
    on the stream it was made on, or synchronise first."""
    filter_shape = frameworks.shape_of(w, "w")
    problem = problem_for(input_shape, filter_shape)
    framework = frameworks.framework_of(w)
    device = frameworks.cuda_device(w, "w")
    _native.require_device(device)
    handle = _resolve_stream(stream, framework, device)
    w = frameworks.contiguous(w, framework)
    return _native.transform_filter(problem, frameworks.export(w, handle), device, handle)
