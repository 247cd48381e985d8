"""The C API's structures (trainc/runtime.h) for the tests that drive a
compiled library through ctypes."""
import ctypes
import sys

import numpy as np

# trainc_dtype
DTYPES = {np.dtype(np.float32): 0, np.dtype(np.float64): 1,
          np.dtype(np.int64): 4, np.dtype(np.int32): 5, np.dtype(np.bool_): 8}


class Tensor(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int), ("rank", ctypes.c_int32),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("data", ctypes.c_void_p)]


class Options(ctypes.Structure):
    _fields_ = [("num_threads", ctypes.c_int32), ("seed", ctypes.c_uint64),
                ("weights_path", ctypes.c_char_p)]


def tensor(array, dtype_code=None):
    """A trainc_tensor viewing `array`, and its shape array (keep both alive)."""
    code = DTYPES[array.dtype] if dtype_code is None else dtype_code
    shape = (ctypes.c_int64 * array.ndim)(*array.shape)
    return Tensor(code, array.ndim, shape, array.ctypes.data), shape


def open_session(path, threads):
    """Loads the library at `path` and opens a session on `threads` threads:
    (library, session, ok), where ok(status, what) exits with the library's
    trainc_last_error() when a call failed."""
    lib = ctypes.CDLL(path)
    lib.trainc_last_error.restype = ctypes.c_char_p

    def ok(status, what):
        if status != 0:
            sys.exit(f"FAILED: {path}: {what}: "
                     f"{lib.trainc_last_error().decode()}")

    session = ctypes.c_void_p()
    ok(lib.trainc_session_open(ctypes.byref(Options(threads, 0, None)),
                               ctypes.byref(session)), "open")
    return lib, session, ok
