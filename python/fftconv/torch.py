"""fftconv.torch.Conv2d: a drop-in for torch.nn.Conv2d that runs fftconv.

It is an nn.Conv2d (same constructor, parameters, state_dict, repr and
initialisation), so checkpoints load either way. forward() takes fftconv's
path when it can compute exactly what nn.Conv2d would:

    stride 1, padding 0 or 'valid', dilation 1, groups 1, a square kernel,
    float32 input and weight on one CUDA device, autocast off

and otherwise calls nn.Conv2d's own forward (F.conv2d), warning once per
reason. Bias is supported: it is added to fftconv's output. Gradients flow:
the forward runs fftconv, the backward PyTorch's convolution gradients
(torch.nn.grad), so training works too, at cuDNN's speed for the backward."""
import warnings

import torch
import torch.nn.functional
from torch import nn

from . import _api

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


class _Conv2dFunction(torch.autograd.Function):
    """y = conv2d(x, w) by fftconv; gradients by torch.nn.grad."""

    @staticmethod
    def forward(context, x, weight):
        context.save_for_backward(x, weight)
        return _api.conv2d(x, weight)

    @staticmethod
    def backward(context, grad_output):
        x, weight = context.saved_tensors
        grad_x = grad_weight = None
        if context.needs_input_grad[0]:
            grad_x = torch.nn.grad.conv2d_input(x.shape, weight, grad_output)
        if context.needs_input_grad[1]:
            grad_weight = torch.nn.grad.conv2d_weight(x, weight.shape, grad_output)
        return grad_x, grad_weight


class Conv2d(nn.Conv2d):
    """torch.nn.Conv2d computed by fftconv where it can be (see the module)."""

    def unsupported_reason(self, input):
        """Why forward(input) cannot take fftconv's path, or None."""
        if self.stride != (1, 1):
            return f"stride={self.stride} (fftconv: 1)"
        if self.padding not in ("valid", (0, 0)):
            return f"padding={self.padding} (fftconv: 0 or 'valid')"
        if self.dilation != (1, 1):
            return f"dilation={self.dilation} (fftconv: 1)"
        if self.groups != 1:
            return f"groups={self.groups} (fftconv: 1)"
        if self.kernel_size[0] != self.kernel_size[1]:
            return f"kernel_size={self.kernel_size} (fftconv: square kernels)"
        if input.dim() not in (3, 4):
            return f"a {input.dim()}-dimensional input"
        if not input.is_cuda or not self.weight.is_cuda:
            return "a CPU tensor (fftconv: CUDA tensors)"
        if input.device != self.weight.device:
            return f"input on {input.device}, weight on {self.weight.device}"
        if input.dtype != torch.float32 or self.weight.dtype != torch.float32:
            return f"dtype {input.dtype}/{self.weight.dtype} (fftconv: float32)"
        if _autocast_enabled():
            return "autocast is enabled (fftconv computes in float32)"
        return None

    def forward(self, input):
        reason = self.unsupported_reason(input)
        if reason is not None:
            _warn_once(reason)
            return super().forward(input)
        batched = input if input.dim() == 4 else input.unsqueeze(0)
        if torch.is_grad_enabled() and (batched.requires_grad or self.weight.requires_grad):
            output = _Conv2dFunction.apply(batched, self.weight)
        else:
            output = _api.conv2d(batched, self.weight)
        if self.bias is not None:
            output = output + self.bias.view(1, -1, 1, 1)
        return output if input.dim() == 4 else output.squeeze(0)
