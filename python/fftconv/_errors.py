"""fftconv's exceptions. Every failure raises a subclass of fftconv.Error
whose message is fftconv's own (it names the field or call and the value);
``status`` is the C++ status name and ``code`` its number (fftconv/status.hpp,
the C ABI's fftconv_status)."""


class Error(RuntimeError):
    """A failed fftconv call. status: 'invalid_argument', 'cuda_error',
    'cufft_error', 'cublas_error', 'out_of_memory' or 'internal_error'."""

    def __init__(self, message, status="internal_error", code=6):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code

    def __str__(self):
        return f"{self.message} [{self.status}]"


class InvalidArgumentError(Error, ValueError):
    """A problem field, tensor shape, dtype, device or layout fftconv cannot take."""


class CudaError(Error):
    """A CUDA runtime, cuFFT or cuBLAS call failed (or no GPU can be used)."""


class OutOfMemoryError(Error, MemoryError):
    """A device allocation failed."""


_CLASSES = {
    "invalid_argument": InvalidArgumentError,
    "cuda_error": CudaError,
    "cufft_error": CudaError,
    "cublas_error": CudaError,
    "out_of_memory": OutOfMemoryError,
}

_CODES = {"invalid_argument": 1, "cuda_error": 2, "cufft_error": 3, "cublas_error": 4,
          "out_of_memory": 5, "internal_error": 6}


def from_native(message, status, code):
    """The exception for a fftconv::error (called by the native module)."""
    return _CLASSES.get(status, Error)(message, status, code)


def invalid_argument(message):
    """An InvalidArgumentError raised by the Python layer, shaped like the C++ ones."""
    return InvalidArgumentError("fftconv: " + message, "invalid_argument", _CODES["invalid_argument"])
