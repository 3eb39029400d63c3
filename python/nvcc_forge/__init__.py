"""nvcc-forge's wheel: the native binaries are bin/nvcc-forge and libexec/nvcc-forge-tools in the
environment's prefix; this package only says where the CMake package is
(`python -m nvcc_forge --cmake-dir`)."""

import importlib.metadata
import os

__all__ = ["cmake_dir", "executable"]


def _installed(suffix):
    # The files the wheel installed, wherever the installer's scheme put them (a venv, --user,
    # --prefix): the distribution's RECORD knows, sys.prefix guesses.
    dist = importlib.metadata.distribution("nvcc-forge")
    for f in dist.files or ():
        # RECORD names data files relative to site-packages (../../../bin/nvcc-forge).
        path = os.path.normpath(str(dist.locate_file(f)))
        if path.replace(os.sep, "/").endswith("/" + suffix):
            return path
    raise FileNotFoundError(f"nvcc-forge: no installed file ends with {suffix} (broken install?)")


def cmake_dir():
    """The directory holding NvccForgeConfig.cmake (for NvccForge_DIR or CMAKE_PREFIX_PATH)."""
    return os.path.dirname(_installed("lib/cmake/NvccForge/NvccForgeConfig.cmake"))


def executable():
    """The installed nvcc-forge front end."""
    return _installed("bin/nvcc-forge")
