"""pytest setup of fftconv's Python tests: the marker of the tests that need
the whole conv2d operator computed on the GPU."""


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "full_operator: checks the whole conv2d operator on the GPU (zero padding, groups, rectangular "
        "kernels, bias) against torch.nn.functional.conv2d; fails on a build whose pipeline refuses them "
        "(\"... is not computed by this build yet\"). -m full_operator runs only these; "
        "-m 'not full_operator' leaves them out, and says how many it deselected.")
