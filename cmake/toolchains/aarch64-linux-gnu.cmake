# Cross build for aarch64 Linux (GH200, GB200, Thor build hosts) on a Debian x86-64 machine with
# `crossbuild-essential-arm64` and the `:arm64` -dev packages (multiarch: the libraries live in
# /usr/lib/aarch64-linux-gnu, the headers are shared). docs/build-hosts.md lists the packages.
#
#   cmake -S . -B build/aarch64 -G Ninja --toolchain cmake/toolchains/aarch64-linux-gnu.cmake
#
# The aarch64 binaries run here under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR): CTest starts every
# unit test through it, and gtest_discover_tests lists the tests through it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(FORGE_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${FORGE_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${FORGE_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${FORGE_CROSS_TRIPLE})

# Debian multiarch has no sysroot to re-root the searches in: CMAKE_LIBRARY_ARCHITECTURE makes
# find_library and find_package look in /usr/lib/aarch64-linux-gnu, and the host's own directories
# are ignored so that an x86-64 archive or package file is never picked up instead.
set(CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu)
# pkg-config reads the target's .pc files (Debian's multiarch directory), not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${FORGE_CROSS_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "")

# qemu-user runs the aarch64 binaries. Their loader and libraries are the multiarch `:arm64`
# packages (/lib/ld-linux-aarch64.so.1, /usr/lib/aarch64-linux-gnu), where qemu finds them without
# -L; QEMU_LD_PREFIX in the environment still overrides that.
find_program(FORGE_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(FORGE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${FORGE_QEMU_AARCH64}")
endif()
