# Cross build for aarch64 Linux (GH200, GB200, Thor build hosts) on a Debian x86-64 machine:
#
#   cmake -S . -B build/aarch64 -G Ninja --toolchain cmake/toolchains/aarch64-linux-gnu.cmake \
#         -DFORGE_AARCH64_SYSROOT=DIR
#
# The compiler is Debian's `crossbuild-essential-arm64` (aarch64-linux-gnu-g++, with its libc and
# libstdc++ in /usr/aarch64-linux-gnu). The libraries come from DIR, a directory the arm64 Debian
# packages are unpacked into (`.ci/install-deps.sh` makes it: apt-get download + dpkg-deb -x), so
# nothing of arm64 is installed on the machine; docs/build-hosts.md says why and lists them.
# The aarch64 binaries run here under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR): CTest starts every
# unit test through it, and gtest_discover_tests lists the tests through it.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(FORGE_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${FORGE_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${FORGE_CROSS_TRIPLE}-g++)
set(CMAKE_LIBRARY_ARCHITECTURE ${FORGE_CROSS_TRIPLE})

if(NOT FORGE_AARCH64_SYSROOT AND DEFINED ENV{FORGE_AARCH64_SYSROOT})
  set(FORGE_AARCH64_SYSROOT "$ENV{FORGE_AARCH64_SYSROOT}")
endif()
if(NOT FORGE_AARCH64_SYSROOT OR NOT EXISTS "${FORGE_AARCH64_SYSROOT}/usr/lib/${FORGE_CROSS_TRIPLE}")
  message(FATAL_ERROR "FORGE_AARCH64_SYSROOT='${FORGE_AARCH64_SYSROOT}' holds no unpacked arm64 "
                      "libraries (usr/lib/${FORGE_CROSS_TRIPLE}); .ci/install-deps.sh makes one")
endif()
# try_compile projects see the variable too.
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES FORGE_AARCH64_SYSROOT)

# Libraries, headers and CMake packages only from the unpacked packages and the cross libc: never
# an x86-64 one of this machine.
set(CMAKE_FIND_ROOT_PATH "${FORGE_AARCH64_SYSROOT}" /usr/${FORGE_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR}
    "${FORGE_AARCH64_SYSROOT}/usr/lib/${FORGE_CROSS_TRIPLE}/pkgconfig:${FORGE_AARCH64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${FORGE_AARCH64_SYSROOT}")
# The linker resolves what the shared libraries need (minizip -> libz) there too.
foreach(dir lib usr/lib)
  string(APPEND CMAKE_EXE_LINKER_FLAGS_INIT
         " -Wl,-rpath-link,${FORGE_AARCH64_SYSROOT}/${dir}/${FORGE_CROSS_TRIPLE}")
endforeach()

# qemu-user runs the aarch64 binaries with the unpacked tree as their root for file lookups (-L):
# the loader, libc and every shared library (minizip and zlib included) come from there.
find_program(FORGE_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(FORGE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${FORGE_QEMU_AARCH64};-L;${FORGE_AARCH64_SYSROOT}")
endif()
