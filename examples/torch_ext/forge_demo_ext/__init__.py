from . import _C  # noqa: F401

axpy = _C.axpy
