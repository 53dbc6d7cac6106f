"""fftconv.torch.Conv2d: a drop-in for torch.nn.Conv2d that runs fftconv.

It is an nn.Conv2d (same constructor, parameters, state_dict, repr and
initialisation), so checkpoints load either way. forward() takes fftconv's
path when it can compute exactly what nn.Conv2d would:

    stride 1, dilation 1, float32 input, weight and bias on one CUDA
    device, autocast off

with any kernel_size (square or not), padding (an int, a pair, 'valid',
'same'), groups and bias, all computed by fftconv (the bias is added by the
same call). Where nn.Conv2d pads the input itself — padding_mode other than
'zeros', or padding='same' with an even kernel extent (one zero more below
and to the right) — so does this layer (torch.nn.functional.pad), then runs
fftconv unpadded. Otherwise it calls nn.Conv2d's own forward (F.conv2d),
warning once per reason. Gradients flow through fftconv too: the backward
computes the input, weight and bias gradients with fftconv's
conv2d_backward_data / conv2d_backward_filter (FFT on the same fused
tiles), on the current stream."""
import warnings

import torch
import torch.nn.functional
from torch import nn

from . import _api
from . import _frameworks
from . import _native

_warned = set()


def _warn_once(reason):
    if reason not in _warned:
        _warned.add(reason)
        warnings.warn(f"fftconv.torch.Conv2d falls back to torch.nn.functional.conv2d: {reason}",
                      RuntimeWarning, stacklevel=3)


def _autocast_enabled():
    try:
        return torch.is_autocast_enabled("cuda")  # PyTorch >= 2.4; the plain call is deprecated there
    except TypeError:
        return torch.is_autocast_enabled()


def same_padding(kernel_size):
    """PyTorch's padding='same' at stride 1, dilation 1: ((top, bottom),
    (left, right)) for a (height, width) kernel; the extra zero of an even
    extent goes below and to the right, as torch.nn.Conv2d puts it."""
    return tuple(((k - 1) // 2, k - 1 - (k - 1) // 2) for k in kernel_size)


def _export(tensor, stream):
    """A DLPack capsule of `tensor`, its producer told fftconv uses it on `stream`."""
    return _frameworks.export(tensor.detach(), stream)


def _data_gradient(problem, dy, weight):
    """x's gradient for `problem` by fftconv, on the current stream."""
    stream = torch.cuda.current_stream(dy.device).cuda_stream
    dx = torch.empty(tuple(problem.input_shape), dtype=torch.float32, device=dy.device)
    _native.conv2d_backward_data(problem, _export(dy, stream), _export(weight, stream), _export(dx, stream),
                                 dy.device.index, stream)
    return dx


def _filter_gradient(problem, x, dy, with_bias):
    """(the weight's gradient, the bias's or None) for `problem` by fftconv,
    on the current stream."""
    stream = torch.cuda.current_stream(x.device).cuda_stream
    dw = torch.empty(tuple(problem.filter_shape), dtype=torch.float32, device=x.device)
    db = torch.empty(problem.out_channels, dtype=torch.float32, device=x.device) if with_bias else None
    _native.conv2d_backward_filter(problem, _export(x, stream), _export(dy, stream), _export(dw, stream),
                                   None if db is None else _export(db, stream), x.device.index, stream)
    return dw, db


class _Conv2dFunction(torch.autograd.Function):
    """y = conv2d(x, w, bias, padding, groups) by fftconv, and its gradients."""

    @staticmethod
    def forward(context, x, weight, bias, padding, groups):
        context.save_for_backward(x, weight)
        context.padding = padding
        context.groups = groups
        context.has_bias = bias is not None
        return _api.conv2d(x, weight, bias, padding=padding, groups=groups)

    @staticmethod
    def backward(context, grad_output):
        x, weight = context.saved_tensors
        problem = _api.problem_for(tuple(x.shape), tuple(weight.shape), padding=context.padding,
                                   groups=context.groups)
        dy = grad_output.contiguous()
        grad_x = grad_weight = grad_bias = None
        if context.needs_input_grad[0]:
            grad_x = _data_gradient(problem, dy, weight)
        want_bias = context.has_bias and context.needs_input_grad[2]
        if context.needs_input_grad[1] or want_bias:
            grad_weight, grad_bias = _filter_gradient(problem, x, dy, want_bias)
            if not context.needs_input_grad[1]:
                grad_weight = None
        return grad_x, grad_weight, grad_bias, None, None


class Conv2d(nn.Conv2d):
    """torch.nn.Conv2d computed by fftconv where it can be (see the module)."""

    def unsupported_reason(self, input):
        """Why forward(input) cannot take fftconv's path, or None."""
        if self.stride != (1, 1):
            return f"stride={self.stride} (fftconv: 1)"
        if self.dilation != (1, 1):
            return f"dilation={self.dilation} (fftconv: 1)"
        if input.dim() not in (3, 4):
            return f"a {input.dim()}-dimensional input"
        if input.dim() == 4 and input.shape[0] == 0:
            return "an empty batch"
        parameters = [self.weight] + ([self.bias] if self.bias is not None else [])
        if not input.is_cuda or not all(p.is_cuda for p in parameters):
            return "a CPU tensor (fftconv: CUDA tensors)"
        if any(p.device != input.device for p in parameters):
            return f"input on {input.device}, weight on {self.weight.device}"
        if input.dtype != torch.float32 or any(p.dtype != torch.float32 for p in parameters):
            return f"dtype {input.dtype}/{self.weight.dtype} (fftconv: float32)"
        if _autocast_enabled():
            return "autocast is enabled (fftconv computes in float32)"
        return None

    def fftconv_padding(self):
        """(the padding fftconv applies, as (height, width); the padding this
        layer applies first with torch.nn.functional.pad, as (left, right,
        top, bottom), or None): fftconv pads with zeros, the same on both
        sides of an axis; anything else is padded explicitly, as nn.Conv2d
        does for padding modes other than 'zeros'."""
        if self.padding == "valid":
            sides = ((0, 0), (0, 0))
        elif self.padding == "same":
            sides = same_padding(self.kernel_size)
        else:
            sides = tuple((p, p) for p in self.padding)
        (top, bottom), (left, right) = sides
        if self.padding_mode == "zeros" and top == bottom and left == right:
            return (top, left), None
        explicit = (left, right, top, bottom)
        return (0, 0), explicit if any(explicit) else None

    def forward(self, input):
        reason = self.unsupported_reason(input)
        if reason is not None:
            _warn_once(reason)
            return super().forward(input)
        batched = input if input.dim() == 4 else input.unsqueeze(0)
        padding, explicit = self.fftconv_padding()
        if explicit is not None:
            mode = "constant" if self.padding_mode == "zeros" else self.padding_mode
            batched = torch.nn.functional.pad(batched, explicit, mode=mode)
        parameters_need_grad = self.weight.requires_grad or (self.bias is not None and self.bias.requires_grad)
        if torch.is_grad_enabled() and (batched.requires_grad or parameters_need_grad):
            output = _Conv2dFunction.apply(batched, self.weight, self.bias, padding, self.groups)
        else:
            output = _api.conv2d(batched, self.weight, self.bias, padding=padding, groups=self.groups)
        return output if input.dim() == 4 else output.squeeze(0)
