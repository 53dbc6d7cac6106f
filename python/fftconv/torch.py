"""fftconv for PyTorch: operators, a drop-in nn.Conv2d, and a converter.

    import fftconv.torch
    y = fftconv.torch.conv2d(x, w, b, 1, "same", 1, groups)   # F.conv2d's arguments, differentiable
    layer = fftconv.torch.Conv2d(128, 128, 31, padding="same", groups=128)   # an nn.Conv2d
    model = fftconv.torch.convert(model)                        # swap the large-kernel nn.Conv2d layers

The computation is three PyTorch operators (torch.library.custom_op):

    torch.ops.fftconv.conv2d(x, w, bias, padding, groups) -> y
    torch.ops.fftconv.conv2d_backward_data(dy, w, padding, groups) -> dx
    torch.ops.fftconv.conv2d_backward_filter(x, dy, weight_size, padding, groups, bias) -> (dw, dbias)

with fake (meta) kernels, so torch.compile(fullgraph=True) and torch.export
trace them without a graph break, and registered autograd: conv2d's
gradients are the two backward operators, whose own gradients are conv2d
and each other (double backward, e.g. a gradient penalty, is exact). Each
runs on torch.cuda.current_stream() and:

- takes float32, bfloat16 and float16 tensors. Half activations (x and y,
  dy and dx) are read and written by fftconv's kernels directly, which
  compute in FP32: they widen each input exactly and round each output to
  nearest once, so a bf16 call gives round(the float32 call on the same
  inputs) and moves half the bytes. Filters and biases are read as float32
  (a half one is cast, a small copy), and the filter gradient is computed
  from float32 copies of x and dy. Outputs have the input's dtype (dw and
  dbias x's). Under torch.autocast('cuda') conv2d casts x, w and bias to
  autocast's dtype first (as nn.Conv2d does) and returns that dtype;
  outside autocast fftconv.torch.conv2d and Conv2d refuse an input whose
  dtype is not the weight's (or the bias's), as F.conv2d does. The
  operators themselves take any mix: y in x's dtype;
- takes any layout (channels_last, slices, transposes): non-dense inputs are
  copied to dense NCHW once (in their dtype), on the stream that reads them;
  the output keeps x's memory format (channels_last in, channels_last out),
  as nn.Conv2d's does;
- works inside CUDA graphs (torch.cuda.graph with PyTorch's warm-up on a
  side stream, torch.cuda.make_graphed_callables): see fftconv.reserve.

fftconv.torch.Conv2d is an nn.Conv2d (same constructor, parameters,
state_dict, repr and initialisation) whose forward runs these operators for
stride 1 and dilation 1 with any kernel_size, zero padding, groups and bias
on CUDA tensors. Where nn.Conv2d pads the input itself (padding_mode other
than 'zeros', or padding='same' with an even kernel extent) so does this
layer, with torch.nn.functional.pad. Stride or dilation other than 1, CPU
tensors, float64, and an empty batch run F.conv2d instead, with one
RuntimeWarning per reason pointing at the caller's line.

fftconv's workspace comes from PyTorch's caching allocator
(torch.cuda.caching_allocator_alloc), so torch.cuda.memory_allocated() and
torch's memory limits see it; use_caching_allocator(False) goes back to
cudaMalloc."""
import os
import sys
import typing
import warnings

import torch
import torch.nn.functional
from torch import Tensor, nn

from . import _api
from . import _frameworks
from . import _native

_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_HALF_OR_FLOAT = (torch.float32, torch.float16, torch.bfloat16)
_warned = set()


def _caller_stacklevel():
    """The stacklevel that attributes a warning raised by the function that
    calls this to the first frame outside this file and outside PyTorch
    (nn.Module.__call__ and its kin): the user's line."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and (frame.f_code.co_filename == __file__ or
                                 frame.f_code.co_filename.startswith(_TORCH_DIR)):
        frame = frame.f_back
        level += 1
    return level


def _warn_once(reason, what="fftconv.torch.Conv2d"):
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(f"{what} falls back to torch.nn.functional.conv2d: {reason}", RuntimeWarning,
                      stacklevel=_caller_stacklevel())


def same_padding(kernel_size):
    """PyTorch's padding='same' at stride 1, dilation 1: ((top, bottom),
    (left, right)) for a (height, width) kernel; the extra zero of an even
    extent goes below and to the right, as torch.nn.Conv2d puts it."""
    return tuple(((k - 1) // 2, k - 1 - (k - 1) // 2) for k in kernel_size)


def _pair(value):
    if isinstance(value, (tuple, list)):
        return tuple(value)
    return (value, value)


# What runs on the device. Kept as plain functions so that the operators'
# plumbing can be checked on the CPU with these replaced (test_cpu.py).


calls = {"conv2d": 0, "conv2d_backward_data": 0, "conv2d_backward_filter": 0}
"""How many times each operator ran fftconv (its CUDA kernel was called):
proof that fftconv computed, and was not replaced by cuDNN or a graph break
(a replayed CUDA graph does not count)."""


def _channels_last(t):
    """Whether `t` is laid out channels_last (and not also plain NCHW)."""
    return t.dim() == 4 and not t.is_contiguous() and t.is_contiguous(memory_format=torch.channels_last)


def _memory_format(t):
    return torch.channels_last if _channels_last(t) else torch.contiguous_format


def _dense(t):
    """`t` as a dense NCHW tensor of its dtype, on the current stream (the
    stream fftconv then reads it on): t itself when it already is one, else
    one copy."""
    # (Not t.to(memory_format=torch.contiguous_format): to() returns t itself
    # for any strides it does not take for channels_last, transposes and
    # expanded gradients included.)
    return t if t.is_contiguous() else t.contiguous()


def _dense_float(t):
    """`t` as a dense NCHW float32 tensor, on the current stream: t itself
    when it already is one, else one copy (a cast makes it dense at once)."""
    if t.dtype != torch.float32:
        t = t.to(dtype=torch.float32, memory_format=torch.contiguous_format)
    return _dense(t)


def _launch(device, call):
    """call(stream handle) on the current stream of `device`, or during a
    CUDA graph capture on a stream that has no fftconv context (making one
    would allocate) on the warmed-up context's stream, forked from the
    capture and joined back (captured events: both streams are in the graph)."""
    stream = torch.cuda.current_stream(device)
    handle = stream.cuda_stream
    return _frameworks.on_capture_safe_stream("torch", device, handle, call)


def _export(t, stream):
    return _frameworks.export(t, stream)


def _problem(x_shape, w_shape, padding, groups):
    return _api.problem_for(tuple(x_shape), tuple(w_shape), padding=tuple(padding), groups=groups)


def _compute_conv2d(x, weight, bias, padding, groups):
    """fftconv's forward on CUDA tensors: y in x's dtype and memory format
    (fftconv reads and writes half activations itself; w and bias float32)."""
    _check_operands("fftconv::conv2d", x, weight, bias)
    problem = _problem(x.shape, weight.shape, padding, groups)
    device = x.device.index
    _native.require_device(device)
    _ensure_allocator(device)
    xd, wd = _dense(x.detach()), _dense_float(weight.detach())
    bd = None if bias is None else _dense_float(bias.detach())
    y = torch.empty(tuple(problem.output_shape), dtype=x.dtype, device=x.device)

    def call(stream):
        _native.conv2d(problem, _export(xd, stream), _export(wd, stream), None if bd is None else _export(bd, stream),
                       _export(y, stream), device, stream)

    _launch(device, call)
    calls["conv2d"] += 1
    return _restore(y, x.dtype, _memory_format(x))


def _compute_backward_data(dy, weight, padding, groups):
    """fftconv's data gradient: dx in dy's dtype and memory format (half dy
    and dx read and written by fftconv itself; w float32)."""
    _check_operands("fftconv::conv2d_backward_data", dy, weight)
    problem = _problem(_input_size(dy, weight, padding, groups), weight.shape, padding, groups)
    device = dy.device.index
    _native.require_device(device)
    _ensure_allocator(device)
    dyd, wd = _dense(dy.detach()), _dense_float(weight.detach())
    dx = torch.empty(tuple(problem.input_shape), dtype=dy.dtype, device=dy.device)

    def call(stream):
        _native.conv2d_backward_data(problem, _export(dyd, stream), _export(wd, stream), _export(dx, stream),
                                     device, stream)

    _launch(device, call)
    calls["conv2d_backward_data"] += 1
    return _restore(dx, dy.dtype, _memory_format(dy))


def _compute_backward_filter(x, dy, weight_size, padding, groups, bias):
    """fftconv's filter (and bias) gradient, in x's dtype; dbias is empty
    when `bias` is False. Computed from float32 copies of half x and dy (the
    library's filter gradient is float32 only)."""
    _check_operands("fftconv::conv2d_backward_filter", x, dy)
    problem = _problem(x.shape, weight_size, padding, groups)
    device = x.device.index
    _native.require_device(device)
    _ensure_allocator(device)
    xd, dyd = _dense_float(x.detach()), _dense_float(dy.detach())
    dw = torch.empty(tuple(problem.filter_shape), dtype=torch.float32, device=x.device)
    db = torch.empty(problem.out_channels if bias else 0, dtype=torch.float32, device=x.device)

    def call(stream):
        _native.conv2d_backward_filter(problem, _export(xd, stream), _export(dyd, stream), _export(dw, stream),
                                       _export(db, stream) if bias else None, device, stream)

    _launch(device, call)
    calls["conv2d_backward_filter"] += 1
    return _restore(dw, x.dtype, torch.contiguous_format), _restore(db, x.dtype, torch.contiguous_format)


def _restore(t, dtype, memory_format):
    """fftconv's dense NCHW result in the dtype and memory format asked for
    (one cast or copy on the stream, none when it already has them)."""
    if t.dtype == dtype and memory_format == torch.contiguous_format:
        return t
    return t.to(dtype=dtype, memory_format=memory_format)


def _input_size(dy, weight, padding, groups):
    """x's shape from y's: height = out_height + kernel_height - 1 - 2 * padding_height."""
    return (dy.shape[0], weight.shape[1] * groups, dy.shape[2] + weight.shape[2] - 1 - 2 * padding[0],
            dy.shape[3] + weight.shape[3] - 1 - 2 * padding[1])


def _check_operands(name, *tensors):
    for t in tensors:
        if t is not None and t.dtype not in _HALF_OR_FLOAT:
            raise _api.invalid_argument(f"{name}: a {t.dtype} tensor; fftconv takes float32, bfloat16 "
                                        "and float16 (fftconv.torch.Conv2d falls back to F.conv2d for others)")


# The operators.


@torch.library.custom_op("fftconv::conv2d", mutates_args=())
def _conv2d_op(x: Tensor, weight: Tensor, bias: typing.Optional[Tensor], padding: typing.List[int],
               groups: int) -> Tensor:
    return _compute_conv2d(x, weight, bias, padding, groups)


@_conv2d_op.register_fake
def _(x, weight, bias, padding, groups):
    out_height = x.shape[2] + 2 * padding[0] - weight.shape[2] + 1
    out_width = x.shape[3] + 2 * padding[1] - weight.shape[3] + 1
    return torch.empty((x.shape[0], weight.shape[0], out_height, out_width), dtype=x.dtype, device=x.device,
                       memory_format=_memory_format(x))


@torch.library.custom_op("fftconv::conv2d_backward_data", mutates_args=())
def _backward_data_op(dy: Tensor, weight: Tensor, padding: typing.List[int], groups: int) -> Tensor:
    return _compute_backward_data(dy, weight, padding, groups)


@_backward_data_op.register_fake
def _(dy, weight, padding, groups):
    return torch.empty(_input_size(dy, weight, padding, groups), dtype=dy.dtype, device=dy.device,
                       memory_format=_memory_format(dy))


@torch.library.custom_op("fftconv::conv2d_backward_filter", mutates_args=())
def _backward_filter_op(x: Tensor, dy: Tensor, weight_size: typing.List[int], padding: typing.List[int],
                        groups: int, bias: bool) -> typing.Tuple[Tensor, Tensor]:
    return _compute_backward_filter(x, dy, weight_size, padding, groups, bias)


@_backward_filter_op.register_fake
def _(x, dy, weight_size, padding, groups, bias):
    return (x.new_empty(tuple(weight_size)), x.new_empty((weight_size[0] if bias else 0,)))


# Autograd: each operator's gradients are the others (all linear in each operand).


def _conv2d_setup(ctx, inputs, output):
    x, weight, bias, padding, groups = inputs
    ctx.save_for_backward(x, weight)
    ctx.padding, ctx.groups, ctx.has_bias = list(padding), groups, bias is not None


def _conv2d_backward(ctx, dy):
    x, weight = ctx.saved_tensors
    grad_x = grad_w = grad_b = None
    if ctx.needs_input_grad[0]:
        grad_x = torch.ops.fftconv.conv2d_backward_data(dy, weight, ctx.padding, ctx.groups)
    want_bias = ctx.has_bias and ctx.needs_input_grad[2]
    if ctx.needs_input_grad[1] or want_bias:
        dw, db = torch.ops.fftconv.conv2d_backward_filter(x, dy, list(weight.shape), ctx.padding, ctx.groups,
                                                          want_bias)
        grad_w = dw if ctx.needs_input_grad[1] else None
        grad_b = db if want_bias else None
    return grad_x, grad_w, grad_b, None, None


def _backward_data_setup(ctx, inputs, output):
    dy, weight, padding, groups = inputs
    ctx.save_for_backward(dy, weight)
    ctx.padding, ctx.groups = list(padding), groups


def _backward_data_backward(ctx, grad_dx):
    # dx = D(dy, w), adjoint in dy of conv2d(., w): d/d dy <g, dx> = conv2d(g, w),
    # d/dw <g, dx> = <conv2d(g, w), dy> = filter gradient of (x = g, dy).
    dy, weight = ctx.saved_tensors
    grad_dy = grad_w = None
    if ctx.needs_input_grad[0]:
        grad_dy = torch.ops.fftconv.conv2d(grad_dx, weight, None, ctx.padding, ctx.groups)
    if ctx.needs_input_grad[1]:
        grad_w, _ = torch.ops.fftconv.conv2d_backward_filter(grad_dx, dy, list(weight.shape), ctx.padding,
                                                             ctx.groups, False)
    return grad_dy, grad_w, None, None


def _backward_filter_setup(ctx, inputs, output):
    x, dy, weight_size, padding, groups, bias = inputs
    ctx.save_for_backward(x, dy)
    ctx.padding, ctx.groups, ctx.bias = list(padding), groups, bias


def _backward_filter_backward(ctx, grad_dw, grad_db):
    # dw = F(x, dy) with <G, dw> = <dy, conv2d(x, G)>; dbias = sum of dy.
    x, dy = ctx.saved_tensors
    grad_x = grad_dy = None
    if ctx.needs_input_grad[0]:
        grad_x = torch.ops.fftconv.conv2d_backward_data(dy, grad_dw, ctx.padding, ctx.groups)
    if ctx.needs_input_grad[1]:
        bias = grad_db if ctx.bias and grad_db is not None else None
        grad_dy = torch.ops.fftconv.conv2d(x, grad_dw, bias, ctx.padding, ctx.groups)
    return grad_x, grad_dy, None, None, None, None


_conv2d_op.register_autograd(_conv2d_backward, setup_context=_conv2d_setup)
_backward_data_op.register_autograd(_backward_data_backward, setup_context=_backward_data_setup)
_backward_filter_op.register_autograd(_backward_filter_backward, setup_context=_backward_filter_setup)


# Autocast: x, w and bias in autocast's dtype (nn.Conv2d's rule for
# convolutions), then the operator with autocast off; fftconv reads x in that
# dtype, computes in FP32 (w and bias widened back to float32, exactly) and
# writes y in that dtype.

_library = torch.library.Library("fftconv", "FRAGMENT")
_AUTOCAST_KEYS = (torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU) |
                  torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCUDA))


def _autocast_dtype():
    try:
        return torch.get_autocast_dtype("cuda")
    except AttributeError:  # PyTorch < 2.4
        return torch.get_autocast_gpu_dtype()


def _autocast_enabled():
    try:
        return torch.is_autocast_enabled("cuda")
    except TypeError:  # PyTorch < 2.3: no device argument, CUDA's
        return torch.is_autocast_enabled()


def _autocast_cast(t, dtype):
    eligible = t is not None and t.is_floating_point() and t.is_cuda and t.dtype != torch.float64
    return t.to(dtype) if eligible else t


def _autocast_conv2d(keyset, x, weight, bias, padding, groups):
    dtype = _autocast_dtype()

    def cast(t):
        return _autocast_cast(t, dtype)

    with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_KEYS):
        return torch.ops.fftconv.conv2d.default(cast(x), cast(weight), cast(bias), padding, groups)


_library.impl("conv2d", _autocast_conv2d, "AutocastCUDA", with_keyset=True)


# PyTorch's caching allocator for fftconv's workspaces.

_allocator_wanted = True
_allocator_devices = set()


def _ensure_allocator(device):
    """Installs torch.cuda.caching_allocator_alloc as `device`'s workspace
    allocator once (the contexts made later get it too)."""
    if device in _allocator_devices or not _allocator_wanted or not _native.has_allocator:
        return
    _allocator_devices.add(device)

    def allocate(nbytes, stream):
        return torch.cuda.caching_allocator_alloc(nbytes, device, stream)

    def deallocate(pointer, nbytes, stream):
        torch.cuda.caching_allocator_delete(pointer)

    _native.set_allocator(device, allocate, deallocate)


def use_caching_allocator(enabled=True):
    """Whether fftconv's contexts take their workspace (and cuBLAS's) from
    PyTorch's caching allocator (default: yes, from the first fftconv call
    with torch tensors on a device) or from cudaMalloc. Switching frees what
    the contexts hold (as fftconv.release does)."""
    global _allocator_wanted
    _allocator_wanted = bool(enabled)
    if not _native.has_allocator:
        return
    for device in list(_allocator_devices):
        _native.set_allocator(device, None, None)
    _allocator_devices.clear()


_frameworks.torch_allocator_hook = _ensure_allocator


# The functional form and the module.


def _fftconv_padding(kernel_size, padding, padding_mode="zeros"):
    """(the padding fftconv applies, as (height, width); the padding applied
    first with torch.nn.functional.pad, as (left, right, top, bottom), or
    None) for nn.Conv2d's padding argument: fftconv pads with zeros, the same
    on both sides of an axis; anything else is padded explicitly, as
    nn.Conv2d does for padding modes other than 'zeros'."""
    if padding == "valid":
        sides = ((0, 0), (0, 0))
    elif padding == "same":
        sides = same_padding(kernel_size)
    elif isinstance(padding, str):
        raise ValueError(f"padding = {padding!r}: expected an int, a (height, width) pair, 'same' or 'valid'")
    else:
        sides = tuple((p, p) for p in _pair(padding))
    (top, bottom), (left, right) = sides
    if padding_mode == "zeros" and top == bottom and left == right:
        return (top, left), None
    explicit = (left, right, top, bottom)
    return (0, 0), explicit if any(explicit) else None


def _unsupported_reason(input, weight, bias, stride, dilation):
    """Why fftconv cannot compute this call (F.conv2d then does), or None."""
    if _pair(stride) != (1, 1):
        return f"stride={_pair(stride)} (fftconv: 1)"
    if _pair(dilation) != (1, 1):
        return f"dilation={_pair(dilation)} (fftconv: 1)"
    if input.dim() not in (3, 4):
        return f"a {input.dim()}-dimensional input"
    if input.dim() == 4 and input.shape[0] == 0:
        return "an empty batch"
    parameters = [weight] + ([bias] if bias is not None else [])
    if not input.is_cuda or not all(p.is_cuda for p in parameters):
        return "a CPU tensor (fftconv: CUDA tensors)"
    if any(p.device != input.device for p in parameters):
        return f"input on {input.device}, weight on {weight.device}"
    if any(t.dtype not in _HALF_OR_FLOAT for t in [input] + parameters):
        return f"dtype {input.dtype}/{weight.dtype} (fftconv: float32, bfloat16, float16)"
    return None


def _check_same_dtype(input, weight, bias):
    """F.conv2d's rule outside autocast: the input's dtype is the weight's
    and the bias's (F.conv2d raises RuntimeError "Input type (...) and
    weight type (...) should be the same"; InvalidArgumentError is a
    RuntimeError too). Under torch.autocast('cuda') the operator casts all
    three to autocast's dtype, as nn.Conv2d's convolution does."""
    mismatched = [(name, t.dtype) for name, t in (("weight", weight), ("bias", bias))
                  if t is not None and t.dtype != input.dtype]
    if mismatched and not _autocast_enabled():
        name, dtype = mismatched[0]
        raise _api.invalid_argument(f"input type ({input.dtype}) and {name} type ({dtype}) should be the same, "
                                    "as torch.nn.functional.conv2d requires: cast one (e.g. layer.to(x.dtype)), "
                                    "or run under torch.autocast('cuda')")


def _fftconv_forward(input, weight, bias, padding, groups, padding_mode="zeros"):
    if input.is_cuda and _autocast_enabled():
        # The casts of the operator's autocast kernel, made here so that
        # torch.compile traces them: that kernel runs inside AOTAutograd's
        # tracing, where the autocast dtype is in no graph or guard Dynamo
        # keeps, and a compiled graph could run under another dtype.
        dtype = _autocast_dtype()
        input, weight, bias = (_autocast_cast(t, dtype) for t in (input, weight, bias))
    _check_same_dtype(input, weight, bias)
    batched = input if input.dim() == 4 else input.unsqueeze(0)
    fftconv_padding, explicit = _fftconv_padding(tuple(weight.shape[2:]), padding, padding_mode)
    if explicit is not None:
        mode = "constant" if padding_mode == "zeros" else padding_mode
        batched = torch.nn.functional.pad(batched, explicit, mode=mode)
    output = torch.ops.fftconv.conv2d(batched, weight, bias, list(fftconv_padding), groups)
    return output if input.dim() == 4 else output.squeeze(0)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """torch.nn.functional.conv2d computed by fftconv, differentiable (also
    twice), traceable by torch.compile and torch.export, autocast-aware.
    Stride or dilation other than 1, CPU tensors, float64 and empty batches
    run F.conv2d, with one RuntimeWarning per reason at the caller's line."""
    reason = _unsupported_reason(input, weight, bias, stride, dilation)
    if reason is not None:
        _warn_once(reason, "fftconv.torch.conv2d")
        return torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)
    return _fftconv_forward(input, weight, bias, padding, groups)


class Conv2d(nn.Conv2d):
    """torch.nn.Conv2d computed by fftconv where it can be (see the module)."""

    def unsupported_reason(self, input):
        """Why forward(input) cannot take fftconv's path, or None."""
        return _unsupported_reason(input, self.weight, self.bias, self.stride, self.dilation)

    def fftconv_padding(self):
        """(the padding fftconv applies, as (height, width); the padding this
        layer applies first with torch.nn.functional.pad, as (left, right,
        top, bottom), or None)."""
        return _fftconv_padding(self.kernel_size, self.padding, self.padding_mode)

    def forward(self, input):
        reason = self.unsupported_reason(input)
        if reason is not None:
            _warn_once(reason)
            return super().forward(input)
        return _fftconv_forward(input, self.weight, self.bias, self.padding, self.groups, self.padding_mode)


def convert(model, *, min_kernel_size=8, use_plan=False, warn=True):
    """Replaces, in place, every torch.nn.Conv2d of `model` (itself
    included) on which fftconv wins by a fftconv.torch.Conv2d with the same
    parameters (the very Parameter objects: optimizers and hooks keep
    working; the state_dict is unchanged), and returns the model.

    fftconv wins for large kernels: a layer is converted when the larger of
    its kernel extents is at least `min_kernel_size` (default 8: at 8 x 8
    fftconv measured 4.6x faster than cuDNN on an H200, and cuDNN wins on
    3 x 3). use_plan=True converts instead every layer whose problem fftconv
    would run on a compiled configuration or the depthwise direct path
    (fftconv.plan; a 1 x 1 input extent is assumed unknown, so only the
    kernel and channels are looked at). Layers with stride or dilation other
    than 1 stay nn.Conv2d (one RuntimeWarning naming them, at the caller's
    line, unless warn=False); subclasses of nn.Conv2d are left alone."""
    kept = []
    for name, module in model.named_modules():
        if type(module) is not nn.Conv2d:
            continue
        large = max(module.kernel_size) >= min_kernel_size
        if use_plan:
            large = _plan_wins(module)
        if not large:
            continue
        if module.stride != (1, 1) or module.dilation != (1, 1):
            kept.append(f"{name or 'the model'} (stride={module.stride}, dilation={module.dilation})")
            continue
        module.__class__ = Conv2d
    if kept and warn:
        warnings.warn("fftconv.torch.convert left these nn.Conv2d layers to PyTorch (fftconv: stride 1, "
                      "dilation 1): " + ", ".join(kept), RuntimeWarning, stacklevel=_caller_stacklevel())
    return model


def _plan_wins(module):
    kernel = module.kernel_size
    extent = max(kernel) * 4
    try:
        plan = _api.plan((1, module.in_channels, extent, extent),
                         (module.out_channels, module.in_channels // module.groups) + tuple(kernel),
                         groups=module.groups)
    except Exception:  # noqa: BLE001 - a problem fftconv refuses: leave the layer alone
        return False
    return plan.path != "generic" or max(kernel) >= 8
