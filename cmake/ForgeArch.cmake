#[=======================================================================[.rst:
ForgeArch
---------

Arch lists from policy, and a gate on what the build really produced, for CMake-based CUDA
packages. Part of nvcc-forge: ``find_package(NvccForge CONFIG)`` makes ``include(ForgeArch)``
available; the module also works when included by path from the nvcc-forge source tree (it then
looks for ``nvcc-forge`` on ``PATH`` or in ``NvccForge_EXECUTABLE``).

.. code-block:: cmake

  find_package(NvccForge 0.1 CONFIG REQUIRED)
  include(ForgeArch)
  forge_arch_resolve(archs PACKAGE mypkg)          # before enable_language(CUDA)
  set(CMAKE_CUDA_ARCHITECTURES "${archs}")
  forge_use_wrapper(MODE observe LOG ${CMAKE_BINARY_DIR}/forge-compile.jsonl)
  enable_language(CUDA)
  add_library(myext MODULE kernels.cu)
  forge_assert_fatbin(myext)                       # POST_BUILD: nvcc-forge verify

Variables
^^^^^^^^^

``NvccForge_EXECUTABLE``
  The ``nvcc-forge`` program. Set by ``find_package(NvccForge)``; otherwise searched on ``PATH``
  on first use. Set it yourself to point at a build tree's binary.

Commands
^^^^^^^^

.. command:: forge_arch_resolve

  .. code-block:: cmake

    forge_arch_resolve(<out-var> [PACKAGE <pkg>] [CUDA <major.minor>|AUTO] [TORCH <ver>]
                       [PLATFORM <platform>] [PYTHON <ver>] [POLICY <file>] [PACKAGES_DIR <dir>])

  Runs ``nvcc-forge resolve`` and sets ``<out-var>`` to a ``CUDA_ARCHITECTURES`` list
  (``75-real;80-real;90``...). ``CUDA AUTO`` (the default) takes the CUDA version of the nvcc that
  nvcc-forge finds (``CMAKE_CUDA_COMPILER`` if set, else ``CUDACXX``, ``PATH``, ``CUDA_HOME``).
  A resolver error stops the configure step with the resolver's message. The resolved list is
  also recorded (global property ``FORGE_ARCH_LIST``) for ``forge_assert_fatbin`` and
  ``forge_use_wrapper``; that property is this command's only side effect.

.. command:: forge_assert_fatbin

  .. code-block:: cmake

    forge_assert_fatbin(<target> [ARCH_LIST <list>] [PACKAGE <pkg>] [ALLOW_MISSING <sm_X>...]
                        [ALLOW_PURE_PYTHON] [ALLOW_EXTRA] [MAX_TOOLKIT <SM=X.Y>...]
                        [EXPECT_EXTENSION <glob>...])

  Adds a ``POST_BUILD`` step running ``nvcc-forge verify`` on ``$<TARGET_FILE:target>``: a
  target whose fatbin does not equal the list fails the build, with the verify table in the build
  log. Without ``ARCH_LIST`` or ``PACKAGE`` it checks against the list ``forge_arch_resolve``
  produced -- never against the target's own ``CUDA_ARCHITECTURES``, which would move both sides of
  the comparison: a target that narrows its own list must fail, not pass. ``EXPECT_EXTENSION``
  globs are passed on as ``--expect-extension``: each must match the file checked.

.. command:: forge_use_wrapper

  .. code-block:: cmake

    forge_use_wrapper([MODE observe|inject|strict] [LOG <file>])

  Routes the project's CUDA compiles through nvcc-forge by setting ``CMAKE_CUDA_COMPILER_LAUNCHER``
  in the caller's scope (targets created afterwards use it), keeping a launcher already set (such
  as ccache) after nvcc-forge, so a policy change reaches the cache key. The policy the wrapper
  compares against is the list recorded by ``forge_arch_resolve``. CMake does not run compiler
  launchers on the device-link step; ``-rdc`` projects that need injection there should set
  ``CMAKE_CUDA_COMPILER`` to an nvcc-forge shim instead (``nvcc-forge shim``).
#]=======================================================================]

include_guard(GLOBAL)
cmake_minimum_required(VERSION 3.25)

function(_forge_find_executable out)
  if(NvccForge_EXECUTABLE)
    set(${out} "${NvccForge_EXECUTABLE}" PARENT_SCOPE)
    return()
  endif()
  find_program(_forge_exe nvcc-forge)
  if(NOT _forge_exe)
    message(FATAL_ERROR "ForgeArch: nvcc-forge not found: use find_package(NvccForge) or set "
                        "NvccForge_EXECUTABLE")
  endif()
  set(${out} "${_forge_exe}" PARENT_SCOPE)
endfunction()

# Environment for running the resolver: the nvcc CMake will use, when known.
function(_forge_nvcc_env out)
  set(env "")
  if(CMAKE_CUDA_COMPILER)
    list(APPEND env "NVCC_FORGE_REAL_NVCC=${CMAKE_CUDA_COMPILER}")
  elseif(DEFINED ENV{CUDACXX} AND NOT "$ENV{CUDACXX}" STREQUAL "")
    list(APPEND env "NVCC_FORGE_REAL_NVCC=$ENV{CUDACXX}")
  endif()
  set(${out} "${env}" PARENT_SCOPE)
endfunction()

function(forge_arch_resolve out_var)
  cmake_parse_arguments(PARSE_ARGV 1 F "" "PACKAGE;CUDA;TORCH;PLATFORM;PYTHON;POLICY;PACKAGES_DIR" "")
  if(F_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "forge_arch_resolve: unknown arguments: ${F_UNPARSED_ARGUMENTS}")
  endif()
  _forge_find_executable(exe)
  set(args "")
  if(F_CUDA AND NOT F_CUDA STREQUAL "AUTO")
    list(APPEND args --cuda "${F_CUDA}")
  endif()
  foreach(opt IN ITEMS PACKAGE TORCH PLATFORM PYTHON POLICY PACKAGES_DIR)
    if(F_${opt})
      string(TOLOWER "${opt}" flag)
      string(REPLACE "_" "-" flag "${flag}")
      list(APPEND args "--${flag}" "${F_${opt}}")
    endif()
  endforeach()
  _forge_nvcc_env(env)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${env} "${exe}" resolve ${args} --format json
    OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(STRIP "${err}" err)
    message(FATAL_ERROR "forge_arch_resolve: nvcc-forge resolve failed (exit ${rc}):\n${err}")
  endif()
  string(JSON list GET "${json}" arch_list)
  string(JSON source GET "${json}" source)
  string(JSON cmake_list GET "${json}" cmake)
  set_property(GLOBAL PROPERTY FORGE_ARCH_LIST "${list}")
  message(STATUS "forge_arch_resolve: ${list} (from ${source}) -> ${cmake_list}")
  set(${out_var} "${cmake_list}" PARENT_SCOPE)
endfunction()

function(forge_assert_fatbin target)
  cmake_parse_arguments(PARSE_ARGV 1 F "ALLOW_PURE_PYTHON;ALLOW_EXTRA" "ARCH_LIST;PACKAGE"
                        "ALLOW_MISSING;MAX_TOOLKIT;EXPECT_EXTENSION")
  if(F_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "forge_assert_fatbin: unknown arguments: ${F_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "forge_assert_fatbin: '${target}' is not a target")
  endif()
  _forge_find_executable(exe)
  set(args "")
  if(F_ARCH_LIST)
    string(REPLACE ";" " " l "${F_ARCH_LIST}")
    list(APPEND args --arch-list "${l}")
  elseif(F_PACKAGE)
    list(APPEND args --package "${F_PACKAGE}")
  else()
    get_property(l GLOBAL PROPERTY FORGE_ARCH_LIST)
    if(NOT l)
      message(FATAL_ERROR "forge_assert_fatbin(${target}): no list to check against: call "
                          "forge_arch_resolve() first, or pass ARCH_LIST or PACKAGE (the target's "
                          "own CUDA_ARCHITECTURES is never used: it would move both sides)")
    endif()
    list(APPEND args --arch-list "${l}")
  endif()
  foreach(w IN LISTS F_ALLOW_MISSING)
    list(APPEND args --allow-missing "${w}")
  endforeach()
  foreach(m IN LISTS F_MAX_TOOLKIT)
    list(APPEND args --max-toolkit "${m}")
  endforeach()
  foreach(g IN LISTS F_EXPECT_EXTENSION)
    list(APPEND args --expect-extension "${g}")
  endforeach()
  if(F_ALLOW_PURE_PYTHON)
    list(APPEND args --allow-pure-python)
  endif()
  if(F_ALLOW_EXTRA)
    list(APPEND args --allow-extra)
  endif()
  _forge_nvcc_env(env)
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E env ${env} "${exe}" verify "$<TARGET_FILE:${target}>" ${args}
    COMMENT "nvcc-forge verify ${target}"
    VERBATIM)
endfunction()

function(forge_use_wrapper)
  cmake_parse_arguments(PARSE_ARGV 0 F "" "MODE;LOG" "")
  if(F_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "forge_use_wrapper: unknown arguments: ${F_UNPARSED_ARGUMENTS}")
  endif()
  if(F_MODE AND NOT F_MODE MATCHES "^(observe|inject|strict)$")
    message(FATAL_ERROR "forge_use_wrapper: MODE must be observe, inject or strict, not '${F_MODE}'")
  endif()
  _forge_find_executable(exe)
  set(env "")
  if(F_MODE)
    list(APPEND env "NVCC_FORGE_MODE=${F_MODE}")
  endif()
  if(F_LOG)
    list(APPEND env "NVCC_FORGE_LOG=${F_LOG}")
  endif()
  get_property(l GLOBAL PROPERTY FORGE_ARCH_LIST)
  if(l)
    list(APPEND env "NVCC_FORGE_ARCH_LIST=${l}")
  endif()
  set(launcher "${exe}")
  if(env)
    set(launcher ${CMAKE_COMMAND} -E env ${env} "${exe}")
  endif()
  # An existing launcher (ccache, sccache) runs after nvcc-forge, so it sees the final flags.
  foreach(existing IN LISTS CMAKE_CUDA_COMPILER_LAUNCHER)
    if(NOT existing STREQUAL exe AND NOT existing IN_LIST launcher)
      list(APPEND launcher "${existing}")
    endif()
  endforeach()
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${launcher}" PARENT_SCOPE)
endfunction()
