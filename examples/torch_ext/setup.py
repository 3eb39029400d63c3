# A small torch CUDAExtension built through nvcc-forge's shadow CUDA root on the GPU machine
# (bench/gpu/device_run.sh). torch.utils.cpp_extension derives the -gencode flags from
# TORCH_CUDA_ARCH_LIST and calls CUDA_HOME/bin/nvcc: with CUDA_HOME pointing at an
# `nvcc-forge shim`, every nvcc call goes through the wrapper.
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="forge_demo_ext",
    version="0.1.0",
    packages=["forge_demo_ext"],
    ext_modules=[
        CUDAExtension(
            "forge_demo_ext._C",
            ["csrc/binding.cpp", "csrc/axpy.cu"],
            extra_compile_args={"cxx": ["-O2"], "nvcc": ["-O2"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
