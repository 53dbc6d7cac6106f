"""The Python module on a GPU, against torch.nn.functional.conv2d in float64.
Run by scripts/python-gpu-test (on the H200) with pytest; needs PyTorch with
CUDA. CuPy and JAX parts run where those are installed with a GPU.

The accuracy bar is the project's: relative L2 error <= 5e-7 and every
element within 1e-3 + 1e-3 * |exact|."""
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
    assert (spectrum.out_channels, spectrum.in_channels, spectrum.kernel_extent) == (64, 64, 16)
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
                               w.__dlpack__(), torch.empty(1, 4, 28, 28, device=DEVICE).__dlpack__(),
                               DEVICE.index, 0)
    with pytest.raises(fftconv.InvalidArgumentError, match="w is in CPU memory"):
        fftconv.conv2d(x, w.cpu())
    with pytest.raises(fftconv.InvalidArgumentError, match="kernel_extent = 33"):
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


def test_conv2d_module_has_nn_conv2d_state_dict_and_results():
    torch.manual_seed(15)
    reference = torch.nn.Conv2d(16, 24, 9, bias=True).to(DEVICE)
    layer = fftconv.torch.Conv2d(16, 24, 9, bias=True).to(DEVICE)
    assert list(layer.state_dict().keys()) == list(reference.state_dict().keys())
    layer.load_state_dict(reference.state_dict())
    x = torch.randn(3, 16, 70, 65, device=DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the supported path must not warn
        y = layer(x)
    exact = F.conv2d(x.double(), reference.weight.double(), reference.bias.double())
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
    (dict(padding=2), "padding"),
    (dict(dilation=2), "dilation"),
    (dict(groups=2), "groups"),
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


def test_conv2d_module_gradients_match_torch(strict_float32):
    torch.manual_seed(17)
    layer = fftconv.torch.Conv2d(8, 8, 7).to(DEVICE)
    reference = torch.nn.Conv2d(8, 8, 7).to(DEVICE)
    reference.load_state_dict(layer.state_dict())
    x = torch.randn(2, 8, 40, 40, device=DEVICE, requires_grad=True)
    x_reference = x.detach().clone().requires_grad_(True)
    grad = torch.randn(2, 8, 34, 34, device=DEVICE)
    layer(x).backward(grad)
    reference(x_reference).backward(grad)
    torch.testing.assert_close(x.grad, x_reference.grad, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(layer.weight.grad, reference.weight.grad, rtol=1e-4, atol=1e-3)
    torch.testing.assert_close(layer.bias.grad, reference.bias.grad, rtol=1e-4, atol=1e-3)
