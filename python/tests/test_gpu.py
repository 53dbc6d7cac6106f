"""The Python module on a GPU, against torch.nn.functional.conv2d in float64.
Run by scripts/python-gpu-test (on the H200) with pytest; needs PyTorch with
CUDA. CuPy and JAX parts run where those are installed with a GPU.

Tests marked full_operator (python/tests/conftest.py) check the whole
operator: zero padding, groups, rectangular kernels and bias, through
fftconv.conv2d, transform_filter and fftconv.torch.Conv2d; -m 'not
full_operator' runs the rest.

The accuracy bar is the project's: relative L2 error <= 5e-7 and every
element within 1e-3 + 1e-3 * |exact|."""
import copy
import sys
import warnings

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device for PyTorch", allow_module_level=True)

import torch.nn.functional as F  # noqa: E402

import fftconv  # noqa: E402
import fftconv.torch  # noqa: E402

DEVICE = torch.device("cuda", torch.cuda.current_device())


def random_problem(shape, seed):
    batch, in_channels, out_channels, height, width, kernel_extent = shape
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(batch, in_channels, height, width, device=DEVICE, generator=generator)
    w = torch.randn(out_channels, in_channels, kernel_extent, kernel_extent, device=DEVICE, generator=generator)
    return x, w


def exact_conv2d(x, w):
    return F.conv2d(x.double(), w.double())


def assert_accurate(y, exact):
    assert y.dtype == torch.float32 and y.shape == exact.shape
    difference = y.double() - exact
    relative_l2 = (difference.norm() / exact.norm()).item()
    worst = (difference.abs() / (1e-3 + 1e-3 * exact.abs())).max().item()
    assert torch.isfinite(y).all(), "non-finite output"
    assert relative_l2 <= 5e-7, f"relative L2 error {relative_l2:.3g} > 5e-7"
    assert worst <= 1.0, f"worst element at {worst:.3g} of the tolerance 1e-3 + 1e-3|exact|"


SHAPES = [
    # batch, in, out, height, width, K
    (2, 128, 128, 256, 256, 16),  # a leaderboard shape (compiled path)
    (4, 64, 64, 128, 128, 8),     # another
    (1, 3, 5, 37, 41, 7),         # odd everything (generic path)
    (3, 16, 8, 64, 48, 1),        # K = 1
    (2, 8, 8, 33, 33, 33),        # K = the image
    (1, 1, 1, 200, 120, 25),      # one channel, H != W
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_conv2d_matches_float64_torch(shape):
    x, w = random_problem(shape, seed=sum(shape))
    y = fftconv.conv2d(x, w)
    assert isinstance(y, torch.Tensor) and y.device == x.device
    assert_accurate(y, exact_conv2d(x, w))


def test_out_is_written_in_place_and_returned():
    x, w = random_problem((2, 4, 6, 40, 40, 9), seed=1)
    out = torch.full((2, 6, 32, 32), float("nan"), device=DEVICE)
    result = fftconv.conv2d(x, w, out=out)
    assert result is out
    assert_accurate(out, exact_conv2d(x, w))


def test_a_wrong_out_is_refused_and_left_alone():
    x, w = random_problem((1, 4, 6, 40, 40, 9), seed=2)
    wrong_shape = torch.zeros(1, 6, 31, 32, device=DEVICE)
    with pytest.raises(fftconv.InvalidArgumentError, match=r"out has shape \[1, 6, 31, 32\]"):
        fftconv.conv2d(x, w, out=wrong_shape)
    assert (wrong_shape == 0).all()
    not_dense = torch.zeros(1, 6, 32, 64, device=DEVICE)[..., ::2]
    with pytest.raises(fftconv.InvalidArgumentError, match="out is not a dense NCHW tensor"):
        fftconv.conv2d(x, w, out=not_dense)


def test_non_dense_inputs_are_copied_and_give_the_same_result():
    x, w = random_problem((2, 8, 4, 48, 48, 5), seed=3)
    x_channels_last = x.to(memory_format=torch.channels_last)
    x_view = torch.cat([x, x], dim=3)[..., :48]  # a strided view
    for variant in (x_channels_last, x_view):
        assert not variant.is_contiguous()
        assert_accurate(fftconv.conv2d(variant, w), exact_conv2d(x, w))


def test_runs_on_the_current_stream_with_one_context_per_stream():
    x, w = random_problem((2, 16, 16, 96, 96, 11), seed=4)
    exact = exact_conv2d(x, w)
    torch.cuda.synchronize()  # nothing in flight when the contexts go
    fftconv.clear_cache()
    fftconv.conv2d(x, w)
    torch.cuda.synchronize()
    default_contexts = fftconv._native.cached_contexts()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        y = fftconv.conv2d(x, w)
        y_again = fftconv.conv2d(x, w)
    assert fftconv._native.cached_contexts() == default_contexts + 1
    side.synchronize()
    assert_accurate(y, exact)
    assert_accurate(y_again, exact)


def test_explicit_stream_argument():
    x, w = random_problem((1, 8, 8, 64, 64, 7), seed=5)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    y = fftconv.conv2d(x, w, stream=stream)
    stream.synchronize()
    assert_accurate(y, exact_conv2d(x, w))


def test_transform_filter_once_then_reuse():
    x, w = random_problem((2, 64, 64, 128, 128, 16), seed=6)
    spectrum = fftconv.transform_filter(w, x.shape)
    assert (spectrum.out_channels, spectrum.in_channels, spectrum.kernel, spectrum.groups) == (64, 64, (16, 16), 1)
    assert spectrum.problem == fftconv.problem_for(x.shape, w.shape)
    assert spectrum.tile_extent >= 16 and spectrum.nbytes > 0
    for seed in (7, 8):
        x_next, _ = random_problem((2, 64, 64, 128, 128, 16), seed=seed)
        assert_accurate(fftconv.conv2d(x_next, spectrum), exact_conv2d(x_next, w))


def test_a_spectrum_for_other_channels_is_refused():
    x, w = random_problem((1, 8, 8, 64, 64, 7), seed=9)
    spectrum = fftconv.transform_filter(w, x.shape)
    x_other = torch.randn(1, 4, 64, 64, device=DEVICE)
    with pytest.raises(fftconv.InvalidArgumentError, match="input channels"):
        fftconv.conv2d(x_other, spectrum)


def test_misuse_raises_invalid_argument_naming_it():
    x, w = random_problem((1, 4, 4, 32, 32, 5), seed=10)
    with pytest.raises(fftconv.InvalidArgumentError, match="x has dtype float64"):
        fftconv._native.conv2d(fftconv.problem_for(x.shape, w.shape), x.double().__dlpack__(),
                               w.__dlpack__(), None, torch.empty(1, 4, 28, 28, device=DEVICE).__dlpack__(),
                               DEVICE.index, 0)
    with pytest.raises(fftconv.InvalidArgumentError, match="w is in CPU memory"):
        fftconv.conv2d(x, w.cpu())
    with pytest.raises(fftconv.InvalidArgumentError, match="kernel.height = 33"):
        fftconv.conv2d(x, torch.randn(4, 4, 33, 33, device=DEVICE))


def test_inputs_that_require_grad_are_accepted():
    x, w = random_problem((1, 4, 4, 32, 32, 5), seed=11)
    w.requires_grad_(True)
    assert_accurate(fftconv.conv2d(x, w), exact_conv2d(x, w.detach()))


def test_workspace_size_and_plan():
    problem = fftconv.problem_for((2, 128, 256, 256), (128, 128, 16, 16))
    assert fftconv.workspace_size(problem) > 0
    assert fftconv.plan(problem).tile_extent >= 16


class DLPackOnly:
    """A producer fftconv does not know: only the DLPack protocol and a shape."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.shape = tuple(tensor.shape)

    def __dlpack__(self, stream=None, **kwargs):
        return self.tensor.__dlpack__(stream=stream)

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()


def test_any_dlpack_producer_gets_a_device_array_back():
    x, w = random_problem((2, 6, 5, 50, 45, 6), seed=12)
    y = fftconv.conv2d(DLPackOnly(x), DLPackOnly(w))
    assert isinstance(y, fftconv.DeviceArray) and tuple(y.shape) == (2, 5, 45, 40)
    assert_accurate(torch.from_dlpack(y), exact_conv2d(x, w))


def test_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    x, w = random_problem((2, 8, 8, 64, 64, 9), seed=13)
    x_cupy, w_cupy = cupy.from_dlpack(x), cupy.from_dlpack(w)
    y = fftconv.conv2d(x_cupy, w_cupy)
    assert isinstance(y, cupy.ndarray) and y.dtype == cupy.float32
    y_torch = torch.from_dlpack(y)
    torch.cuda.synchronize()
    assert_accurate(y_torch, exact_conv2d(x, w))


def test_jax_arrays():
    jax = pytest.importorskip("jax")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU backend here")
    x, w = random_problem((1, 4, 4, 40, 40, 5), seed=14)
    x_jax = jax.device_put(jax.numpy.asarray(x.cpu().numpy()), gpu)
    w_jax = jax.device_put(jax.numpy.asarray(w.cpu().numpy()), gpu)
    y = fftconv.conv2d(x_jax, w_jax)
    assert "jax" in type(y).__module__ or "jaxlib" in type(y).__module__
    torch.cuda.synchronize()
    assert_accurate(torch.from_numpy(jax.device_get(y).copy()).to(DEVICE), exact_conv2d(x, w))


# fftconv.torch.Conv2d


@pytest.mark.parametrize("bias", [False, pytest.param(True, marks=pytest.mark.full_operator)])
def test_conv2d_module_has_nn_conv2d_state_dict_and_results(bias):
    torch.manual_seed(15)
    reference = torch.nn.Conv2d(16, 24, 9, bias=bias).to(DEVICE)
    layer = fftconv.torch.Conv2d(16, 24, 9, bias=bias).to(DEVICE)
    assert list(layer.state_dict().keys()) == list(reference.state_dict().keys())
    layer.load_state_dict(reference.state_dict())
    x = torch.randn(3, 16, 70, 65, device=DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the supported path must not warn
        y = layer(x)
    exact = F.conv2d(x.double(), reference.weight.double(), reference.bias.double() if bias else None)
    assert_accurate(y, exact)
    reference.load_state_dict(layer.state_dict())  # and back


def test_conv2d_module_unbatched_input():
    layer = fftconv.torch.Conv2d(3, 4, 5, bias=False).to(DEVICE)
    x = torch.randn(3, 30, 30, device=DEVICE)
    y = layer(x)
    assert y.shape == (4, 26, 26)
    assert_accurate(y, F.conv2d(x.double().unsqueeze(0), layer.weight.double()).squeeze(0))


@pytest.mark.parametrize("arguments, reason", [
    (dict(stride=2), "stride"),
    (dict(dilation=2), "dilation"),
    (dict(stride=(1, 2), padding=2, groups=2), "stride"),
])
def test_conv2d_module_falls_back_with_one_warning(arguments, reason):
    torch.manual_seed(16)
    layer = fftconv.torch.Conv2d(4, 6, 5, **arguments).to(DEVICE)
    reference = torch.nn.Conv2d(4, 6, 5, **arguments).to(DEVICE)
    reference.load_state_dict(layer.state_dict())
    x = torch.randn(2, 4, 32, 32, device=DEVICE)
    fftconv.torch._warned.clear()
    with pytest.warns(RuntimeWarning, match=reason):
        y = layer(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once only
        layer(x)
    torch.testing.assert_close(y, reference(x))


def test_conv2d_module_falls_back_for_cpu_and_float64():
    layer = fftconv.torch.Conv2d(2, 3, 3)
    x = torch.randn(1, 2, 10, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(layer(x), F.conv2d(x, layer.weight, layer.bias))
        layer_double = fftconv.torch.Conv2d(2, 3, 3).to(DEVICE, torch.float64)
        x_double = x.to(DEVICE, torch.float64)
        torch.testing.assert_close(layer_double(x_double),
                                   F.conv2d(x_double, layer_double.weight, layer_double.bias))


@pytest.fixture
def strict_float32():
    """cuDNN without TF32, so PyTorch's own gradients are float32-accurate."""
    saved = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = saved


@pytest.mark.parametrize("bias", [False, pytest.param(True, marks=pytest.mark.full_operator)])
def test_conv2d_module_gradients_match_torch(strict_float32, bias):
    torch.manual_seed(17)
    layer = fftconv.torch.Conv2d(8, 8, 7, bias=bias).to(DEVICE)
    reference = torch.nn.Conv2d(8, 8, 7, bias=bias).to(DEVICE)
    reference.load_state_dict(layer.state_dict())
    x = torch.randn(2, 8, 40, 40, device=DEVICE, requires_grad=True)
    x_reference = x.detach().clone().requires_grad_(True)
    grad = torch.randn(2, 8, 34, 34, device=DEVICE)
    layer(x).backward(grad)
    reference(x_reference).backward(grad)
    torch.testing.assert_close(x.grad, x_reference.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad, rtol=1e-4, atol=1e-3)
    if bias:
        torch.testing.assert_close(layer.bias.grad, reference.bias.grad, rtol=1e-4, atol=1e-3)


# The whole operator: F.conv2d(x, w, bias, padding=..., groups=...) with any
# kernel shape. Results need the pipeline to compute padding, groups,
# rectangular kernels and bias (full_operator); argument checks do not.


def random_operator(case, seed):
    """x, w and the bias (or None) for an OPERATOR_CASES entry."""
    batch, in_channels, out_channels, height, width, kernel, padding, groups, bias = case
    kernel_height, kernel_width = (kernel, kernel) if isinstance(kernel, int) else kernel
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    x = torch.randn(batch, in_channels, height, width, device=DEVICE, generator=generator)
    w = torch.randn(out_channels, in_channels // groups, kernel_height, kernel_width, device=DEVICE,
                    generator=generator)
    b = torch.randn(out_channels, device=DEVICE, generator=generator) if bias else None
    return x, w, b


def exact_operator(x, w, b, padding, groups):
    return F.conv2d(x.double(), w.double(), None if b is None else b.double(), padding=padding, groups=groups)


OPERATOR_CASES = [
    # batch, in, out, height, width, kernel, padding, groups, bias
    (2, 4, 6, 33, 40, 7, 3, 1, False),                 # padding, square kernel
    (1, 3, 5, 37, 41, (5, 9), (2, 4), 1, False),       # rectangular kernel and padding
    (2, 8, 8, 48, 40, (9, 3), "same", 1, False),       # 'same', odd rectangular kernel
    (2, 16, 8, 64, 48, 5, "valid", 1, True),           # bias alone
    (2, 8, 12, 40, 40, 7, 0, 2, False),                # groups alone
    (2, 32, 32, 56, 56, 31, "same", 32, True),         # depthwise 31 x 31 'same' (problem.hpp's example)
    (1, 8, 16, 30, 30, 5, 2, 8, True),                 # depthwise, channel multiplier 2
    (3, 6, 9, 35, 29, (7, 4), (3, 1), 3, True),        # everything at once
    (1, 2, 3, 20, 20, 3, 5, 1, True),                  # more padding than kernel: border outputs = bias
    (1, 2, 2, 10, 12, (14, 16), 2, 1, False),          # kernel = the padded image: 1 x 1 output
    (2, 4, 4, 32, 64, (1, 15), (0, 7), 1, False),      # a 1 x K kernel
    (2, 128, 128, 256, 256, 16, 8, 1, True),           # a compiled shape, padded, with bias
    (2, 64, 64, 128, 128, 8, (4, 0), 4, True),         # another, grouped
]


def operator_id(case):
    batch, in_channels, out_channels, height, width, kernel, padding, groups, bias = case
    kernel = "x".join(map(str, kernel)) if isinstance(kernel, tuple) else kernel
    padding = "x".join(map(str, padding)) if isinstance(padding, tuple) else padding
    return f"{batch}x{in_channels}x{out_channels}x{height}x{width}-k{kernel}-p{padding}-g{groups}" + \
        ("-bias" if bias else "")


@pytest.mark.full_operator
@pytest.mark.parametrize("case", OPERATOR_CASES, ids=operator_id)
def test_full_operator_matches_float64_torch(case):
    padding, groups = case[6], case[7]
    x, w, b = random_operator(case, seed=sum(c for c in case if isinstance(c, int)))
    y = fftconv.conv2d(x, w, b, padding=padding, groups=groups)
    assert isinstance(y, torch.Tensor) and y.device == x.device
    assert_accurate(y, exact_operator(x, w, b, padding, groups))


@pytest.mark.full_operator
def test_full_operator_takes_f_conv2d_positional_arguments_and_out():
    case = (2, 6, 9, 35, 29, (7, 4), (3, 1), 3, True)
    x, w, b = random_operator(case, seed=20)
    exact = exact_operator(x, w, b, (3, 1), 3)
    assert_accurate(fftconv.conv2d(x, w, b, 1, (3, 1), 1, 3), exact)  # F.conv2d's order
    out = torch.full(exact.shape, float("nan"), device=DEVICE)
    assert fftconv.conv2d(x, w, b, padding=(3, 1), groups=3, stride=(1, 1), dilation=1, out=out) is out
    assert_accurate(out, exact)


@pytest.mark.full_operator
def test_full_operator_non_dense_bias_and_inputs_are_copied():
    case = (2, 8, 8, 40, 36, (5, 3), "same", 2, True)
    x, w, b = random_operator(case, seed=21)
    exact = exact_operator(x, w, b, "same", 2)
    b_strided = torch.stack([b, b], dim=1)[:, 0]
    assert not b_strided.is_contiguous()
    y = fftconv.conv2d(x.to(memory_format=torch.channels_last), w, b_strided, padding="same", groups=2)
    assert_accurate(y, exact)


@pytest.mark.full_operator
def test_full_operator_filter_spectrum_keeps_its_padding_and_groups():
    case = (2, 16, 16, 64, 64, (9, 7), "same", 4, True)
    x, w, b = random_operator(case, seed=22)
    spectrum = fftconv.transform_filter(w, x.shape, padding="same", groups=4)
    assert spectrum.problem.padding == (4, 3) and spectrum.groups == 4
    assert spectrum.kernel == (9, 7)
    assert "kernel=9x7, groups=4" in repr(spectrum)
    for seed in (23, 24):
        x_next, _, _ = random_operator(case, seed=seed)
        exact = exact_operator(x_next, w, b, "same", 4)
        assert_accurate(fftconv.conv2d(x_next, spectrum, b), exact)                       # the spectrum's
        assert_accurate(fftconv.conv2d(x_next, spectrum, b, padding=(4, 3), groups=4), exact)  # the same, given
    with pytest.raises(fftconv.InvalidArgumentError,
                       match=r"FilterSpectrum made for padding=\(4, 3\), groups=4, but this call asks for "
                             r"padding=\(0, 0\), groups=4"):
        fftconv.conv2d(x, spectrum, padding=0)


def test_operator_arguments_are_refused_by_name_on_cuda_tensors():
    # Checked before anything runs: these pass on a build that computes only
    # the plain convolution.
    x, w = random_problem((1, 4, 6, 32, 32, 5), seed=25)
    with pytest.raises(fftconv.InvalidArgumentError, match="stride = 2 is not supported"):
        fftconv.conv2d(x, w, stride=2)
    with pytest.raises(fftconv.InvalidArgumentError, match=r"dilation = \(1, 2\) is not supported"):
        fftconv.conv2d(x, w, dilation=(1, 2))
    with pytest.raises(fftconv.InvalidArgumentError, match="even kernel height 4"):
        fftconv.conv2d(x, torch.randn(6, 4, 4, 3, device=DEVICE), padding="same")
    with pytest.raises(fftconv.InvalidArgumentError, match="w has 4 input channels per group"):
        fftconv.conv2d(x, w, groups=2)
    with pytest.raises(fftconv.InvalidArgumentError, match="w has 6 output channels .* groups = 4 does not divide"):
        fftconv.conv2d(torch.randn(1, 8, 32, 32, device=DEVICE), torch.randn(6, 2, 5, 5, device=DEVICE), groups=4)
    with pytest.raises(fftconv.InvalidArgumentError, match=r"bias has shape \[4\]; expected \[6\]"):
        fftconv.conv2d(x, w, torch.zeros(4, device=DEVICE))
    with pytest.raises(fftconv.InvalidArgumentError, match="bias is in CPU memory"):
        fftconv.conv2d(x, w, torch.zeros(6))
    with pytest.raises(fftconv.InvalidArgumentError, match="bias has dtype float64"):
        fftconv.conv2d(x, w, torch.zeros(6, device=DEVICE, dtype=torch.float64))
    with pytest.raises(fftconv.InvalidArgumentError, match="stride = 2"):
        fftconv.conv2d(x, w, None, 2)  # F.conv2d's order: stride after the bias


full_operator = pytest.mark.full_operator
MODULE_CASES = [
    # fftconv pads, groups, adds the bias, takes a rectangular kernel:
    pytest.param(dict(kernel_size=(7, 3), padding="same"), marks=full_operator),
    pytest.param(dict(kernel_size=5, padding=2, groups=2), marks=full_operator),
    pytest.param(dict(kernel_size=(3, 5), padding=(1, 2), groups=4), marks=full_operator),  # depthwise, x2
    pytest.param(dict(kernel_size=(5, 3), padding=2, padding_mode="circular", groups=2), marks=full_operator),
    pytest.param(dict(kernel_size=(4, 5), padding="same", bias=False), marks=full_operator),
    pytest.param(dict(kernel_size=4, padding="same"), marks=full_operator),  # bias
    # The layer pads (torch.nn.functional.pad), fftconv runs unpadded, square, no bias:
    dict(kernel_size=4, padding="same", bias=False),          # even 'same': one zero more below, right
    dict(kernel_size=3, padding=2, padding_mode="reflect", bias=False),
    dict(kernel_size=5, padding=(1, 3), padding_mode="replicate", bias=False),
]


def module_id(arguments):
    return ",".join(f"{k}={v}" for k, v in arguments.items())


@pytest.mark.parametrize("arguments", MODULE_CASES, ids=module_id)
def test_conv2d_module_with_padding_groups_and_bias_matches_nn_conv2d(arguments, strict_float32):
    torch.manual_seed(26)
    layer = fftconv.torch.Conv2d(4, 8, **arguments).to(DEVICE)
    reference = torch.nn.Conv2d(4, 8, **arguments).to(DEVICE)
    reference.load_state_dict(layer.state_dict())
    x = torch.randn(2, 4, 37, 30, device=DEVICE, requires_grad=True)
    x_reference = x.detach().clone().requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fftconv's path: no fallback warning
        y = layer(x)
    assert_accurate(y, copy.deepcopy(reference).double()(x.detach().double()))
    grad = torch.randn_like(y)
    y.backward(grad)
    reference(x_reference).backward(grad)
    torch.testing.assert_close(x.grad, x_reference.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad, rtol=1e-4, atol=1e-3)
    if layer.bias is not None:
        torch.testing.assert_close(layer.bias.grad, reference.bias.grad, rtol=1e-4, atol=1e-3)


# Training: fftconv.torch.Conv2d's gradients are fftconv's (conv2d_backward_data
# / conv2d_backward_filter), checked against PyTorch's autograd in float64.

GRADIENT_CASES = [
    # batch, in, out, height, width, kernel, padding, groups, bias
    (2, 8, 8, 40, 40, 7, 0, 1, True),                  # dense, valid
    (2, 8, 6, 33, 29, (5, 9), "same", 2, True),        # grouped, rectangular, 'same'
    (2, 16, 16, 56, 56, 31, "same", 16, True),         # RepLKNet-style depthwise 31 x 31
    (1, 4, 8, 20, 20, 5, 7, 4, False),                 # padding beyond the kernel, multiplier 2
    (4, 16, 16, 64, 64, 8, 0, 1, False),               # a leaderboard-like dense K = 8
]


@pytest.mark.full_operator
@pytest.mark.parametrize("case", GRADIENT_CASES, ids=operator_id)
def test_gradients_match_float64_autograd(case):
    batch, in_channels, out_channels, height, width, kernel, padding, groups, bias = case
    x, w, b = random_operator(case, 41)
    layer = fftconv.torch.Conv2d(in_channels, out_channels, kernel, padding=padding, groups=groups,
                                 bias=bias).to(DEVICE)
    with torch.no_grad():
        layer.weight.copy_(w)
        if bias:
            layer.bias.copy_(b)
    exact_layer = torch.nn.Conv2d(in_channels, out_channels, kernel, padding=padding, groups=groups,
                                  bias=bias).to(DEVICE, torch.float64)
    exact_layer.load_state_dict({k: v.double() for k, v in layer.state_dict().items()})
    for positive in (False, True):
        generator = torch.Generator(device=DEVICE).manual_seed(43 + positive)
        inputs = torch.rand_like(x) if positive else x
        x32 = inputs.clone().requires_grad_(True)
        x64 = inputs.double().requires_grad_(True)
        y32 = layer(x32)
        grad = (torch.rand if positive else torch.randn)(y32.shape, device=DEVICE, generator=generator)
        layer.zero_grad()
        exact_layer.zero_grad()
        y32.backward(grad)
        exact_layer(x64).backward(grad.double())
        assert_accurate(x32.grad, x64.grad)
        difference = layer.weight.grad.double() - exact_layer.weight.grad
        relative_l2 = (difference.norm() / exact_layer.weight.grad.norm()).item()
        worst = (difference.abs() / (1e-3 + 1e-3 * exact_layer.weight.grad.abs())).max().item()
        assert relative_l2 <= 1e-6, f"weight gradient relative L2 {relative_l2:.3g} > 1e-6"
        assert worst <= 1.0, f"weight gradient worst element at {worst:.3g} of the tolerance"
        if bias:
            worst = ((layer.bias.grad.double() - exact_layer.bias.grad).abs() /
                     (1e-3 + 1e-3 * exact_layer.bias.grad.abs())).max().item()
            assert worst <= 1.0, f"bias gradient worst element at {worst:.3g} of the tolerance"


@pytest.mark.full_operator
def test_a_depthwise_block_trains_like_nn_conv2d(strict_float32):
    """A few SGD steps of a RepLKNet-style block (depthwise 31 x 31 'same'
    with bias, then a 1 x 1 mix) follow nn.Conv2d's loss curve."""
    def block(conv):
        torch.manual_seed(5)
        return torch.nn.Sequential(conv(32, 32, 31, padding="same", groups=32), torch.nn.GELU(),
                                   torch.nn.Conv2d(32, 32, 1)).to(DEVICE)
    ours, theirs = block(fftconv.torch.Conv2d), block(torch.nn.Conv2d)
    theirs.load_state_dict(ours.state_dict())
    generator = torch.Generator(device=DEVICE).manual_seed(7)
    x = torch.randn(4, 32, 28, 28, device=DEVICE, generator=generator)
    target = torch.randn(4, 32, 28, 28, device=DEVICE, generator=generator)
    losses = []
    for model in (ours, theirs):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
        curve = []
        for _ in range(5):
            optimizer.zero_grad()
            loss = F.mse_loss(model(x), target)
            loss.backward()
            optimizer.step()
            curve.append(loss.item())
        losses.append(curve)
    assert losses[0][-1] < losses[0][0], f"the loss did not fall: {losses[0]}"
    for mine, reference in zip(*losses):
        assert abs(mine - reference) <= 1e-4 * abs(reference), f"{losses[0]} vs {losses[1]}"


# Issue 24 (Python findings) and issue 25 (PyTorch-native): streams, the
# context cache, CUDA graphs, double backward, layouts, the torch.library
# operators (opcheck, torch.compile, torch.export), autocast and half
# tensors, torch's caching allocator, convert().


def relative_l2(y, exact):
    return ((y.double() - exact).norm() / exact.norm()).item()


def test_explicit_stream_copies_of_non_dense_inputs_live_until_fftconv_reads_them():
    # Issue 24.3: the copy of a non-dense x was made (and freed) on the
    # current stream while fftconv read it on `stream=`; the current stream's
    # next allocations reused it at once.
    x, w = random_problem((2, 16, 16, 128, 128, 9), seed=40)
    xt = x.transpose(2, 3)
    exact = exact_conv2d(xt.contiguous(), w)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(300_000_000)  # fftconv's work on `side` waits behind this
    y = fftconv.conv2d(xt, w, stream=side)
    garbage = [torch.full(xt.shape, float("nan"), device=DEVICE) for _ in range(4)]
    torch.cuda.synchronize()
    del garbage
    assert_accurate(y, exact)


def test_the_context_cache_is_bounded_per_device():
    # Issue 24.7: one context per stream handle was kept for ever.
    fftconv.clear_cache()
    x, w = random_problem((1, 4, 4, 32, 32, 5), seed=41)
    streams = [torch.cuda.Stream() for _ in range(fftconv.context_cache_size() + 5)]
    for stream in streams:
        with torch.cuda.stream(stream):
            fftconv.conv2d(x, w)
    torch.cuda.synchronize()
    assert fftconv._native.cached_contexts(DEVICE.index) <= fftconv.context_cache_size() == 8
    saved = fftconv.context_cache_size()
    fftconv.set_context_cache_size(2)
    try:
        with torch.cuda.stream(streams[0]):
            y = fftconv.conv2d(x, w)
        torch.cuda.synchronize()
        assert fftconv._native.cached_contexts(DEVICE.index) <= 2
        assert_accurate(y, exact_conv2d(x, w))
        with pytest.raises(fftconv.InvalidArgumentError, match="at least 1"):
            fftconv.set_context_cache_size(0)
    finally:
        fftconv.set_context_cache_size(saved)


def replknet_like(channels, kernel, *, fftconv_pointwise=True, bias=True):
    """A RepLKNet-style block: depthwise kernel x kernel 'same' + bias, GELU, 1x1, residual."""
    pointwise = fftconv.torch.Conv2d if fftconv_pointwise else torch.nn.Conv2d

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.depthwise = fftconv.torch.Conv2d(channels, channels, kernel, padding="same", groups=channels,
                                                  bias=bias)
            self.act = torch.nn.GELU()
            self.pointwise = pointwise(channels, channels, 1)

        def forward(self, x):
            return x + self.pointwise(self.act(self.depthwise(x)))

    return Block()


def test_cuda_graph_with_pytorch_documented_warm_up_replays_on_new_data():
    # Issue 24.4 / 25.4: warm-up on a side stream, then torch.cuda.graph,
    # failed with cudaErrorStreamCaptureInvalidated (the context was made
    # during the capture).
    fftconv.clear_cache()
    torch.manual_seed(50)
    model = replknet_like(16, 13).to(DEVICE)
    reference = copy.deepcopy(model)
    loss_fn = torch.nn.MSELoss()
    static_input = torch.randn(2, 16, 40, 40, device=DEVICE)
    static_target = torch.randn(2, 16, 40, 40, device=DEVICE)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            model.zero_grad(set_to_none=True)
            loss_fn(model(static_input), static_target).backward()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    model.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_output = model(static_input)
        static_loss = loss_fn(static_output, static_target)
        static_loss.backward()
    assert fftconv._native.pinned_contexts(DEVICE.index) >= 1
    for seed in (1, 2):
        generator = torch.Generator(device=DEVICE).manual_seed(seed)
        data = torch.randn(2, 16, 40, 40, device=DEVICE, generator=generator)
        target = torch.randn(2, 16, 40, 40, device=DEVICE, generator=generator)
        static_input.copy_(data)
        static_target.copy_(target)
        before = dict(fftconv.torch.calls)
        graph.replay()
        assert fftconv.torch.calls == before  # the graph ran fftconv's kernels, not Python
        reference.zero_grad(set_to_none=True)
        output = reference(data)
        loss_fn(output, target).backward()
        torch.cuda.synchronize()
        torch.testing.assert_close(static_output, output, rtol=1e-5, atol=1e-5)
        for graphed, eager in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(graphed.grad, eager.grad, rtol=1e-4, atol=1e-6)


def test_make_graphed_callables_replays_forward_and_backward():
    fftconv.clear_cache()
    torch.manual_seed(51)
    model = replknet_like(8, 9).to(DEVICE)
    reference = copy.deepcopy(model)
    sample = torch.randn(2, 8, 32, 32, device=DEVICE, requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(model, (sample,))
    for seed in (3, 4):
        generator = torch.Generator(device=DEVICE).manual_seed(seed)
        data = torch.randn(2, 8, 32, 32, device=DEVICE, generator=generator)
        grad = torch.randn(2, 8, 32, 32, device=DEVICE, generator=generator)
        model.zero_grad(set_to_none=True)
        reference.zero_grad(set_to_none=True)
        x = data.clone().requires_grad_(True)
        x_reference = data.clone().requires_grad_(True)
        y = graphed(x)
        y.backward(grad)
        y_reference = reference(x_reference)
        y_reference.backward(grad)
        torch.cuda.synchronize()
        torch.testing.assert_close(y, y_reference, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(x.grad, x_reference.grad, rtol=1e-5, atol=1e-5)
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)


def test_reserve_sizes_the_context_of_the_stream_a_graph_is_captured_on():
    fftconv.clear_cache()
    x, w = random_problem((2, 8, 8, 48, 48, 11), seed=52)
    stream = torch.cuda.Stream()
    fftconv.reserve(x, w, padding=5, stream=stream)
    fftconv.reserve(fftconv.problem_for(x.shape, w.shape, padding=5), backward=True, stream=stream)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        y = fftconv.conv2d(x, w, padding=5)
    x.copy_(torch.randn_like(x))
    graph.replay()
    torch.cuda.synchronize()
    assert_accurate(y, F.conv2d(x.double(), w.double(), padding=5))


def test_a_capture_without_warm_up_or_reserve_is_refused_saying_what_to_do():
    fftconv.clear_cache()
    x, w = random_problem((1, 4, 4, 24, 24, 5), seed=53)
    graph = torch.cuda.CUDAGraph()
    with pytest.raises(fftconv.InvalidArgumentError, match="warm-up.*fftconv.reserve"):
        with torch.cuda.graph(graph):
            fftconv.conv2d(x, w)
    torch.cuda.synchronize()
    assert_accurate(fftconv.conv2d(x, w), exact_conv2d(x, w))  # and fftconv works after


def test_workspace_limit_and_release_from_python():
    x, w = random_problem((2, 16, 16, 96, 96, 17), seed=54)
    exact = exact_conv2d(x, w)
    assert fftconv.workspace_limit() is None
    fftconv.set_workspace_limit(4 << 20)
    try:
        assert fftconv.workspace_limit() == 4 << 20
        assert fftconv.workspace_size(x, w) <= 4 << 20
        assert_accurate(fftconv.conv2d(x, w), exact)  # in passes
    finally:
        fftconv.set_workspace_limit(None)
    fftconv.release()
    assert_accurate(fftconv.conv2d(x, w), exact)


def test_the_workspace_comes_from_torch_caching_allocator():
    # Issue 25.4: torch.cuda.memory_allocated did not see fftconv's workspace.
    assert fftconv._native.has_allocator
    x, w = random_problem((2, 64, 64, 128, 128, 16), seed=55)
    fftconv.conv2d(x[:1, :1, :8, :8].contiguous(), w[:1, :1, :3, :3].contiguous())  # installs the allocator
    fftconv.clear_cache()
    needed = fftconv.workspace_size(x, w)
    stream = torch.cuda.Stream()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    with torch.cuda.stream(stream):
        y = fftconv.conv2d(x, w)
    torch.cuda.synchronize()
    grown = torch.cuda.memory_allocated() - before - y.numel() * 4
    assert grown >= needed > 0, (grown, needed)
    fftconv.clear_cache()
    assert torch.cuda.memory_allocated() - before - y.numel() * 4 <= 0
    fftconv.torch.use_caching_allocator(False)
    try:
        with torch.cuda.stream(stream):
            y = fftconv.conv2d(x, w)
        torch.cuda.synchronize()
        assert torch.cuda.memory_allocated() - before - y.numel() * 4 <= 0  # cudaMalloc: invisible
    finally:
        fftconv.torch.use_caching_allocator(True)
    assert_accurate(y, exact_conv2d(x, w))


def test_conv2d_from_several_threads_with_torch_allocator_on_new_shapes():
    # Review: the torch allocator's callback releases the GIL, so another
    # thread could enter a context mid-call (while its workspace grows),
    # evict a context in use, or make two contexts for one stream. Now every
    # use of the cache holds its mutex (taken without the GIL).
    import threading
    from threads import run_in_threads
    device = DEVICE.index
    fftconv.torch.use_caching_allocator(True)
    fftconv.clear_cache()
    saved = fftconv.context_cache_size()
    fftconv.set_context_cache_size(2)  # fewer than the streams below: evictions while others run
    shapes = [(1 + i % 2, 4 + 2 * i, 4 + i, 40 + 8 * i, 36 + 12 * i, 3 + 2 * i) for i in range(6)]
    cases = [random_problem(shape, seed=60 + i) for i, shape in enumerate(shapes)]
    torch.cuda.synchronize()
    shared = torch.cuda.Stream()  # one context that every thread uses
    threads_count = 4
    barrier = threading.Barrier(threads_count, timeout=60)
    results = [[] for _ in range(threads_count)]

    def work(index):
        own = torch.cuda.Stream()
        barrier.wait()
        for repeat in range(3):
            for step in range(len(cases)):
                k = (step + index) % len(cases)  # each thread grows the workspaces in its own order
                stream = shared if (k + repeat) % 2 else own
                x, w = cases[k]
                with torch.cuda.stream(stream):
                    y = fftconv.conv2d(x, w)
                results[index].append((k, y, stream))

    try:
        run_in_threads(work, threads_count, timeout=300)
        torch.cuda.synchronize()
        streams = [stream for stream, _, _ in fftconv._native.cached_streams(device)]
        assert len(streams) == len(set(streams)) <= 2, streams  # one context per stream, within the bound
        exact = [exact_conv2d(x, w) for x, w in cases]
        for outputs in results:
            assert len(outputs) == 3 * len(cases)
            for k, y, _ in outputs:
                assert_accurate(y, exact[k])
    finally:
        fftconv.set_context_cache_size(saved)
        torch.cuda.synchronize()
        fftconv.clear_cache()


def test_an_allocator_that_calls_fftconv_gets_an_error_not_a_deadlock():
    # The callback runs under the cache's mutex: a call back into fftconv
    # from it is refused instead of locking that mutex a second time.
    device = DEVICE.index
    x, w = random_problem((1, 4, 4, 32, 32, 5), seed=70)
    refused = []

    def allocate(nbytes, stream):
        try:
            fftconv._native.cached_contexts(device)
        except fftconv.InvalidArgumentError as error:
            refused.append(error)
        return torch.cuda.caching_allocator_alloc(nbytes, device, stream)

    def deallocate(pointer, nbytes, stream):
        torch.cuda.caching_allocator_delete(pointer)

    fftconv.torch.use_caching_allocator(False)  # fftconv.torch leaves this device's allocator alone
    fftconv.clear_cache()
    try:
        fftconv._native.set_allocator(device, allocate, deallocate)
        with torch.cuda.stream(torch.cuda.Stream()):
            y = fftconv.conv2d(x, w)
        torch.cuda.synchronize()
        assert refused and all("must not call fftconv" in str(error) for error in refused)
        assert_accurate(y, exact_conv2d(x, w))
    finally:
        torch.cuda.synchronize()
        fftconv.clear_cache()
        fftconv._native.set_allocator(device, None, None)
        fftconv.torch.use_caching_allocator(True)


def test_double_backward_is_exact():
    # Issue 24.9: a gradient penalty (create_graph=True) lost its share of dw.
    torch.manual_seed(56)
    layer = fftconv.torch.Conv2d(4, 6, 5, padding=2, bias=True).to(DEVICE)
    x = torch.randn(2, 4, 24, 24, device=DEVICE, requires_grad=True)
    (gx,) = torch.autograd.grad(layer(x).pow(2).sum(), x, create_graph=True)
    gx.pow(2).sum().backward()
    w64 = layer.weight.detach().double().requires_grad_(True)
    b64 = layer.bias.detach().double().requires_grad_(True)
    x64 = x.detach().double().requires_grad_(True)
    (gx64,) = torch.autograd.grad(F.conv2d(x64, w64, b64, padding=2).pow(2).sum(), x64, create_graph=True)
    gx64.pow(2).sum().backward()
    assert relative_l2(gx, gx64.detach()) <= 1e-6
    assert relative_l2(layer.weight.grad, w64.grad) <= 1e-5
    assert relative_l2(layer.bias.grad, b64.grad) <= 1e-5
    assert relative_l2(x.grad, x64.grad) <= 1e-5


@pytest.mark.parametrize("layout", ["channels_last", "transposed", "sliced"])
def test_non_dense_x_w_and_dy_train_and_keep_the_memory_format(layout):
    # Issue 24.14 / 25.3: backward refused "x is not a dense NCHW tensor".
    torch.manual_seed(57)
    layer = fftconv.torch.Conv2d(8, 8, 7, padding=3, groups=2, bias=True).to(DEVICE)
    base = torch.randn(2, 8, 30, 30, device=DEVICE)
    if layout == "channels_last":
        layer = layer.to(memory_format=torch.channels_last)
        assert layer.weight.is_contiguous(memory_format=torch.channels_last)
        x = base.to(memory_format=torch.channels_last)
    elif layout == "transposed":
        x = base.transpose(2, 3)
    else:
        x = torch.randn(2, 8, 30, 60, device=DEVICE)[..., ::2]
    x = x.detach().requires_grad_(True)
    y = layer(x)
    assert y.is_contiguous(memory_format=torch.channels_last) == (layout == "channels_last")
    dy = torch.randn(2, 8, 30, 60, device=DEVICE)[..., 1::2]
    if layout == "channels_last":
        dy = dy.contiguous(memory_format=torch.channels_last)
    y.backward(dy)
    x64 = x.detach().double().requires_grad_(True)
    w64 = layer.weight.detach().double().requires_grad_(True)
    b64 = layer.bias.detach().double().requires_grad_(True)
    y64 = F.conv2d(x64, w64, b64, padding=3, groups=2)
    y64.backward(dy.double())
    assert_accurate(y, y64.detach())
    assert relative_l2(x.grad, x64.grad) <= 5e-7
    assert relative_l2(layer.weight.grad, w64.grad) <= 1e-6
    assert relative_l2(layer.bias.grad, b64.grad) <= 1e-6


def test_the_operators_pass_opcheck():
    x = torch.randn(2, 4, 20, 18, device=DEVICE, requires_grad=True)
    w = torch.randn(4, 1, 7, 5, device=DEVICE, requires_grad=True)
    b = torch.randn(4, device=DEVICE, requires_grad=True)
    dy = torch.randn(2, 4, 20, 18, device=DEVICE, requires_grad=True)
    ops = torch.ops.fftconv
    cases = [
        (ops.conv2d.default, (x, w, b, [3, 2], 4)),
        (ops.conv2d.default, (x.detach().to(memory_format=torch.channels_last).requires_grad_(True), w, None,
                              [3, 2], 4)),
        (ops.conv2d_backward_data.default, (dy, w, [3, 2], 4)),
        (ops.conv2d_backward_filter.default, (x, dy, [4, 1, 7, 5], [3, 2], 4, True)),
        (ops.conv2d_backward_filter.default, (x, dy, [4, 1, 7, 5], [3, 2], 4, False)),
    ]
    for op, arguments in cases:
        torch.library.opcheck(op, arguments)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_the_operators_pass_opcheck_with_half_activations(dtype):
    # The fake kernels give eager's dtypes: y in x's, dx in dy's, dw and
    # dbias in x's; w may be float32 (read as it is) or the activations' dtype.
    x = torch.randn(2, 4, 20, 18, device=DEVICE, dtype=dtype, requires_grad=True)
    w = torch.randn(4, 1, 7, 5, device=DEVICE, requires_grad=True)
    w_half = w.detach().to(dtype).requires_grad_(True)
    b = torch.randn(4, device=DEVICE, dtype=dtype, requires_grad=True)
    dy = torch.randn(2, 4, 20, 18, device=DEVICE, dtype=dtype, requires_grad=True)
    ops = torch.ops.fftconv
    cases = [
        (ops.conv2d.default, (x, w_half, b, [3, 2], 4)),
        (ops.conv2d.default, (x, w, None, [3, 2], 4)),
        (ops.conv2d.default, (x.detach().to(memory_format=torch.channels_last).requires_grad_(True), w_half, None,
                              [3, 2], 4)),
        (ops.conv2d_backward_data.default, (dy, w_half, [3, 2], 4)),
        (ops.conv2d_backward_data.default, (dy, w, [3, 2], 4)),
        (ops.conv2d_backward_filter.default, (x, dy, [4, 1, 7, 5], [3, 2], 4, True)),
    ]
    for op, arguments in cases:
        torch.library.opcheck(op, arguments)


def profile_kernels(run):
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as profile:
        run()
        torch.cuda.synchronize()
    return [event.name for event in profile.events()]


def test_torch_compile_fullgraph_runs_fftconv_and_matches_eager(strict_float32):
    torch.manual_seed(58)
    block = replknet_like(32, 31).to(DEVICE)
    x = torch.randn(4, 32, 40, 40, device=DEVICE)
    grad = torch.randn(4, 32, 40, 40, device=DEVICE)
    x_eager = x.clone().requires_grad_(True)
    y_eager = block(x_eager)
    y_eager.backward(grad)
    eager_grads = [p.grad.clone() for p in block.parameters()]
    block.zero_grad(set_to_none=True)
    compiled = torch.compile(block, fullgraph=True)
    x_compiled = x.clone().requires_grad_(True)
    before = dict(fftconv.torch.calls)
    y_compiled = compiled(x_compiled)
    y_compiled.backward(grad)
    torch.cuda.synchronize()
    assert fftconv.torch.calls["conv2d"] - before["conv2d"] == 2
    assert fftconv.torch.calls["conv2d_backward_data"] - before["conv2d_backward_data"] == 2
    assert fftconv.torch.calls["conv2d_backward_filter"] - before["conv2d_backward_filter"] == 2
    torch.testing.assert_close(y_compiled, y_eager, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(x_compiled.grad, x_eager.grad, rtol=1e-5, atol=1e-5)
    for p, eager in zip(block.parameters(), eager_grads):
        torch.testing.assert_close(p.grad, eager, rtol=1e-4, atol=1e-5)
    names = profile_kernels(lambda: compiled(x_compiled).backward(grad))
    assert any("fftconv" in name and "::" in name and not name.startswith("fftconv::") for name in names), \
        "no fftconv kernel in the profile"
    convolutions = [name for name in names if "convolution" in name or "cudnn" in name.lower()]
    assert not convolutions, convolutions


def test_torch_export_keeps_the_fftconv_operator():
    torch.manual_seed(59)
    block = replknet_like(16, 15).to(DEVICE)
    x = torch.randn(2, 16, 32, 32, device=DEVICE)
    exported = torch.export.export(block, (x,))
    targets = [node.target for node in exported.graph.nodes if node.op == "call_function"]
    assert targets.count(torch.ops.fftconv.conv2d.default) == 2
    torch.testing.assert_close(exported.module()(x), block(x), rtol=1e-5, atol=1e-5)


# Half activations: fftconv's kernels read bf16/fp16 x (dy) and write y (dx)
# in that dtype, computing in FP32. A half call is the float32 call on the
# widened inputs rounded once (the same problem takes the same route), and
# within the dtype's rounding of the float64 result: relative L2 <= 2^-8
# (bf16, 8 significant bits) and 2^-10 (fp16, 11).

HALF_DTYPES = [pytest.param(torch.bfloat16, 2.0 ** -8, id="bf16"), pytest.param(torch.float16, 2.0 ** -10, id="fp16")]
HALF_CASES = [
    # batch, in, out, height, width, kernel, padding, groups, bias
    (2, 32, 32, 56, 56, 31, "same", 32, True),         # depthwise 31 x 31 'same' (RepLKNet)
    (2, 16, 24, 48, 40, 9, 4, 1, True),                # dense
]


def bits(t):
    """A half tensor's bit patterns, for bit-for-bit comparisons."""
    return t.contiguous().view(torch.int16)


def padding_pair(x, w, padding, groups):
    return list(fftconv.problem_for(x.shape, w.shape, padding=padding, groups=groups).padding)


@pytest.mark.parametrize("dtype, bar", HALF_DTYPES)
@pytest.mark.parametrize("case", HALF_CASES, ids=operator_id)
def test_half_activations_are_read_and_written_by_fftconv(case, dtype, bar):
    padding, groups = case[6], case[7]
    x32, w32, b32 = random_operator(case, seed=70)
    x, w, b = x32.to(dtype), w32.to(dtype), b32.to(dtype)  # a layer in dtype, as nn.Conv2d.to(dtype) has
    before = dict(fftconv.torch.calls)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fftconv's path: no fallback
        y = fftconv.torch.conv2d(x, w, b, 1, padding, 1, groups)
    assert y.dtype == dtype and y.shape == (case[0], case[2], case[3], case[4])
    assert fftconv.torch.calls["conv2d"] == before["conv2d"] + 1
    # The float32 call on the widened inputs, rounded once: bit for bit.
    y32 = fftconv.torch.conv2d(x.float(), w.float(), b.float(), 1, padding, 1, groups)
    assert y32.dtype == torch.float32
    assert torch.equal(bits(y), bits(y32.to(dtype))), "the half call is not round(the float32 call)"
    exact = F.conv2d(x.double(), w.double(), b.double(), padding=padding, groups=groups)
    assert torch.isfinite(y).all()
    assert relative_l2(y, exact) <= bar, f"relative L2 {relative_l2(y, exact):.3g} > {bar:.3g}"
    # The operator and fftconv.conv2d take a float32 filter with half x, as it is.
    pad = padding_pair(x, w, padding, groups)
    y_op = torch.ops.fftconv.conv2d(x, w.float(), b.float(), pad, groups)
    assert y_op.dtype == dtype and torch.equal(bits(y_op), bits(y))
    y_api = fftconv.conv2d(x, w.float(), b.float(), padding=padding, groups=groups)
    assert isinstance(y_api, torch.Tensor) and y_api.dtype == dtype and torch.equal(bits(y_api), bits(y))
    # A non-dense half x is copied once, in its dtype.
    y_channels_last = fftconv.torch.conv2d(x.to(memory_format=torch.channels_last), w, b, 1, padding, 1, groups)
    assert y_channels_last.dtype == dtype and y_channels_last.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(bits(y_channels_last), bits(y))


@pytest.mark.parametrize("dtype, bar", HALF_DTYPES)
def test_half_activations_through_a_filter_spectrum_and_a_device_array(dtype, bar):
    case = (2, 8, 8, 40, 36, (9, 7), "same", 2, True)
    x32, w, b = random_operator(case, seed=71)
    x = x32.to(dtype)
    spectrum = fftconv.transform_filter(w, x.shape, padding="same", groups=2)
    y = fftconv.conv2d(x, spectrum, b)
    assert y.dtype == dtype
    assert torch.equal(bits(y), bits(fftconv.conv2d(x.float(), spectrum, b).to(dtype)))
    assert relative_l2(y, exact_operator(x.float(), w, b, "same", 2)) <= bar
    out = fftconv.conv2d(DLPackOnly(x), DLPackOnly(w), DLPackOnly(b), padding="same", groups=2)
    assert isinstance(out, fftconv.DeviceArray) and out.dtype == str(dtype).split(".")[-1]
    assert torch.equal(bits(torch.from_dlpack(out)), bits(fftconv.conv2d(x, w, b, padding="same", groups=2)))


@pytest.mark.parametrize("dtype, bar", HALF_DTYPES)
def test_half_activation_dtypes_are_checked(dtype, bar):
    x, w = random_problem((1, 4, 6, 32, 32, 5), seed=72)
    x = x.to(dtype)
    name = str(dtype).split(".")[-1]
    with pytest.raises(fftconv.InvalidArgumentError, match=f"out has dtype float32 but x has dtype {name}"):
        fftconv.conv2d(x, w, out=torch.empty(1, 6, 28, 28, device=DEVICE))
    with pytest.raises(fftconv.InvalidArgumentError, match=f"w has dtype {name}; fftconv takes w in float32 only"):
        fftconv.conv2d(x, w.to(dtype))
    with pytest.raises(fftconv.InvalidArgumentError, match=f"bias has dtype {name}; fftconv takes bias in float32"):
        fftconv.conv2d(x, w, torch.zeros(6, device=DEVICE, dtype=dtype))
    out = torch.empty(1, 6, 28, 28, device=DEVICE, dtype=dtype)
    assert fftconv.conv2d(x, w, out=out) is out
    # Outside autocast, fftconv.torch mirrors F.conv2d: the input's dtype is the weight's and the bias's.
    layer = fftconv.torch.Conv2d(4, 6, 5).to(DEVICE)
    with pytest.raises(RuntimeError, match="should be the same"):
        torch.nn.functional.conv2d(x, layer.weight, layer.bias)  # PyTorch's own rule
    with pytest.raises(fftconv.InvalidArgumentError,
                       match=rf"input type \({dtype}\) and weight type \(torch.float32\) should be the same"):
        layer(x)
    with pytest.raises(fftconv.InvalidArgumentError,
                       match=rf"input type \({dtype}\) and bias type \(torch.float32\) should be the same"):
        fftconv.torch.conv2d(x, layer.weight.to(dtype), layer.bias)
    assert layer.to(dtype)(x).dtype == dtype


@pytest.mark.parametrize("dtype, bar", HALF_DTYPES)
@pytest.mark.parametrize("case", HALF_CASES, ids=operator_id)
def test_half_backward_data_writes_dx_in_dy_dtype(case, dtype, bar):
    batch, in_channels, out_channels, height, width, kernel, padding, groups, _ = case
    x32, w, _ = random_operator(case, seed=73)
    pad = padding_pair(x32, w, padding, groups)
    generator = torch.Generator(device=DEVICE).manual_seed(74)
    dy = torch.randn(batch, out_channels, height + 2 * pad[0] - kernel + 1, width + 2 * pad[1] - kernel + 1,
                     device=DEVICE, generator=generator).to(dtype)
    before = fftconv.torch.calls["conv2d_backward_data"]
    dx = torch.ops.fftconv.conv2d_backward_data(dy, w, pad, groups)
    assert fftconv.torch.calls["conv2d_backward_data"] == before + 1
    assert dx.dtype == dtype and dx.shape == x32.shape
    dx32 = torch.ops.fftconv.conv2d_backward_data(dy.float(), w, pad, groups)
    assert dx32.dtype == torch.float32 and torch.equal(bits(dx), bits(dx32.to(dtype)))
    exact = torch.nn.grad.conv2d_input(x32.shape, w.double(), dy.double(), padding=pad, groups=groups)
    assert relative_l2(dx, exact) <= bar, f"relative L2 {relative_l2(dx, exact):.3g} > {bar:.3g}"
    dx_channels_last = torch.ops.fftconv.conv2d_backward_data(dy.to(memory_format=torch.channels_last), w, pad, groups)
    assert dx_channels_last.dtype == dtype and dx_channels_last.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(bits(dx_channels_last), bits(dx))
    # The filter gradient stays float32 inside (x and dy widened), returned in x's dtype.
    dw, db = torch.ops.fftconv.conv2d_backward_filter(x32.to(dtype), dy, list(w.shape), pad, groups, True)
    assert dw.dtype == dtype and db.dtype == dtype
    dw32, db32 = torch.ops.fftconv.conv2d_backward_filter(x32.to(dtype).float(), dy.float(), list(w.shape), pad,
                                                          groups, True)
    assert torch.equal(bits(dw), bits(dw32.to(dtype))) and torch.equal(bits(db), bits(db32.to(dtype)))


AUTOCAST_LAYERS = [
    pytest.param(dict(in_channels=16, out_channels=16, kernel_size=15, padding="same", groups=16), id="depthwise15"),
    pytest.param(dict(in_channels=32, out_channels=32, kernel_size=31, padding="same", groups=32), id="depthwise31"),
    pytest.param(dict(in_channels=8, out_channels=12, kernel_size=9, padding=4), id="dense9"),
]


@pytest.mark.parametrize("dtype, bar", HALF_DTYPES)
@pytest.mark.parametrize("arguments", AUTOCAST_LAYERS)
def test_autocast_runs_fftconv_and_returns_autocast_dtype(arguments, dtype, bar):
    torch.manual_seed(60)
    layer = fftconv.torch.Conv2d(**arguments).to(DEVICE)
    x = torch.randn(2, arguments["in_channels"], 48, 48, device=DEVICE, requires_grad=True)
    before = dict(fftconv.torch.calls)
    with torch.autocast("cuda", dtype=dtype):
        y = layer(x)
        # A half activation into a float32 layer: autocast casts, as nn.Conv2d's does.
        y_half_input = layer(x.detach().to(dtype))
    assert y.dtype == dtype and y_half_input.dtype == dtype
    assert fftconv.torch.calls["conv2d"] == before["conv2d"] + 2
    assert torch.equal(bits(y_half_input), bits(y))
    rounded = [t.detach().to(dtype) for t in (x, layer.weight, layer.bias)]
    padding, groups = layer.fftconv_padding()[0], layer.groups
    # The float32 call on autocast's rounded inputs, rounded once: bit for bit.
    y32 = fftconv.torch.conv2d(*(t.float() for t in rounded), 1, padding, 1, groups)
    assert torch.equal(bits(y), bits(y32.to(dtype)))
    exact = F.conv2d(*(t.double() for t in rounded), padding=padding, groups=groups)
    assert relative_l2(y, exact) <= bar
    grad = torch.randn(y.shape, device=DEVICE)
    y.float().backward(grad)
    assert fftconv.torch.calls["conv2d_backward_data"] == before["conv2d_backward_data"] + 1
    assert fftconv.torch.calls["conv2d_backward_filter"] == before["conv2d_backward_filter"] + 1
    assert layer.weight.grad.dtype == torch.float32 and x.grad.dtype == torch.float32
    assert torch.isfinite(layer.weight.grad).all() and torch.isfinite(x.grad).all()
    # dx was written in autocast's dtype by the kernel (then widened by the cast's gradient).
    dy = grad.to(dtype)
    dx = torch.ops.fftconv.conv2d_backward_data(dy, rounded[1], list(padding), groups)
    assert dx.dtype == dtype and torch.equal(x.grad, dx.float())
    exact_dx = torch.nn.grad.conv2d_input(x.shape, rounded[1].double(), dy.double(), padding=padding, groups=groups)
    assert relative_l2(x.grad, exact_dx) <= bar
    exact_dw = torch.nn.grad.conv2d_weight(rounded[0].double(), layer.weight.shape, dy.double(), padding=padding,
                                           groups=groups)
    assert relative_l2(layer.weight.grad, exact_dw) <= bar


@pytest.mark.parametrize("dtype, bar", HALF_DTYPES)
def test_half_tensors_run_fftconv_in_float32(dtype, bar):
    torch.manual_seed(61)
    layer = fftconv.torch.Conv2d(8, 8, 9, padding=4).to(DEVICE, dtype)
    x = torch.randn(2, 8, 40, 40, device=DEVICE, dtype=dtype)
    before = fftconv.torch.calls["conv2d"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y = layer(x)
    assert fftconv.torch.calls["conv2d"] == before + 1 and y.dtype == dtype
    exact = F.conv2d(x.double(), layer.weight.double(), layer.bias.double(), padding=4)
    assert relative_l2(y, exact) <= 1.02 * relative_l2(exact.to(dtype), exact) + 1e-6
    assert relative_l2(y, exact) <= bar


@pytest.mark.parametrize("dtype, bar", HALF_DTYPES)
def test_torch_compile_with_half_activations_matches_eager(dtype, bar):
    torch.manual_seed(63)
    block = replknet_like(16, 31).to(DEVICE)
    x = torch.randn(2, 16, 32, 32, device=DEVICE)
    grad = torch.randn(2, 16, 32, 32, device=DEVICE)

    def step(model, x):
        x = x.clone().requires_grad_(True)
        with torch.autocast("cuda", dtype=dtype):
            y = model(x)
        y.float().backward(grad)
        return y, x.grad, [p.grad.clone() for p in model.parameters()]

    y_eager, dx_eager, grads_eager = step(block, x)
    block.zero_grad(set_to_none=True)
    compiled = torch.compile(block, fullgraph=True)
    before = dict(fftconv.torch.calls)
    y_compiled, dx_compiled, grads_compiled = step(compiled, x)
    torch.cuda.synchronize()
    # The residual adds float32 x: the block's output is float32 either way.
    assert y_compiled.dtype == y_eager.dtype == torch.float32
    assert fftconv.torch.calls["conv2d"] - before["conv2d"] == 2
    assert fftconv.torch.calls["conv2d_backward_data"] - before["conv2d_backward_data"] == 2
    # Inductor may round the GELU and the residual differently from eager:
    # within the dtype's rounding, not bit for bit.
    assert relative_l2(y_compiled, y_eager.double()) <= bar
    assert relative_l2(dx_compiled, dx_eager.double()) <= bar
    for compiled_grad, eager_grad in zip(grads_compiled, grads_eager):
        assert compiled_grad.dtype == eager_grad.dtype == torch.float32
        assert relative_l2(compiled_grad, eager_grad.double()) <= bar


def test_functional_conv2d_is_differentiable_and_falls_back_with_a_warning_at_the_callers_line():
    torch.manual_seed(62)
    x = torch.randn(2, 6, 30, 30, device=DEVICE, requires_grad=True)
    w = torch.randn(6, 3, 9, 9, device=DEVICE, requires_grad=True)
    b = torch.randn(6, device=DEVICE, requires_grad=True)
    y = fftconv.torch.conv2d(x, w, b, 1, "same", 1, 2)
    assert_accurate(y, F.conv2d(x.double(), w.double(), b.double(), padding="same", groups=2))
    y.sum().backward()
    assert x.grad is not None and w.grad is not None and b.grad is not None
    fftconv.torch._warned.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        strided = fftconv.torch.conv2d(x, w, b, 2, 4, 1, 2)
    caught = [c for c in caught if "fftconv" in str(c.message)]
    assert [(c.filename, c.lineno) for c in caught] == [(__file__, line)], [str(c.message) for c in caught]
    torch.testing.assert_close(strided, F.conv2d(x, w, b, 2, 4, 1, 2))
