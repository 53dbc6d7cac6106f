"""fftconv: large-kernel 2D convolution on NVIDIA GPUs by tiled overlap-save
FFT. PyTorch's F.conv2d semantics (NCHW, stride 1, dilation 1; zero padding,
groups and bias as F.conv2d takes them), computed in FP32: x and y float32,
bfloat16 or float16 (half ones read and written by the kernels directly), w
and bias float32.

    import fftconv
    y = fftconv.conv2d(x, w)                  # CUDA tensors: PyTorch, CuPy, JAX, DLPack
    y = fftconv.conv2d(x, w, b, padding="same", groups=x.shape[1])   # F.conv2d's arguments
    spectrum = fftconv.transform_filter(w, x.shape)
    y = fftconv.conv2d(x, spectrum)           # inference: the filter transformed once
    fftconv.plan(x.shape, w.shape)            # which path runs (no GPU needed)
    fftconv.Problem(batch=8, in_channels=64, out_channels=64, height=56, width=56,
                    kernel=(31, 15), padding="same", groups=64)

    import fftconv.torch
    layer = fftconv.torch.Conv2d(64, 64, 16)  # nn.Conv2d's constructor and state_dict

Calls run on the producer's current stream (torch.cuda.current_stream()) and
are asynchronous there. One fftconv context (cuFFT plans, workspace) is kept
per (device, stream), at most set_context_cache_size() per device (least
recently used freed first); reserve() sizes one ahead (CUDA graphs),
set_workspace_limit() bounds the workspaces, release() frees them and
clear_cache() destroys the contexts. Errors raise fftconv.Error
subclasses with fftconv's message and status."""
import atexit as _atexit
import os as _os

from ._errors import CudaError, Error, InvalidArgumentError, OutOfMemoryError
from . import _native
from ._api import (DeviceArray, FilterSpectrum, Plan, Problem, context_cache_size, conv2d, plan, problem_for,
                   release, reserve, set_context_cache_size, set_workspace_limit, transform_filter,
                   workspace_limit, workspace_size)
from ._version import __version__

device_count = _native.device_count
compiled_configs = _native.compiled_configs


def clear_cache():
    """Frees the cached contexts (workspaces, cuFFT plans) of every device
    and stream. Work already enqueued must have finished."""
    _native.clear_cache()


# Before the CUDA runtime shuts down with the process.
_atexit.register(_native.clear_cache)
# A child forked while another thread of the parent held the context cache's
# lock would wait for it forever: the child gets a cache of its own.
_os.register_at_fork(after_in_child=_native.renew_contexts_after_fork)


def __getattr__(name):
    # fftconv.torch without an explicit import; importing it needs PyTorch.
    if name == "torch":
        import importlib
        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'fftconv' has no attribute {name!r}")


__all__ = ["conv2d", "transform_filter", "plan", "workspace_size", "problem_for", "clear_cache", "reserve",
           "set_workspace_limit", "workspace_limit", "release", "set_context_cache_size", "context_cache_size",
           "device_count", "compiled_configs", "Problem", "Plan", "FilterSpectrum", "DeviceArray",
           "Error", "InvalidArgumentError", "CudaError", "OutOfMemoryError"]
