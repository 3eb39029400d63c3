"""Sample package built by nvcc-forge's demo: a CUDA extension with two kernels."""
__version__ = "0.1.0"
