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
  add_subdirectory(third_party/vendored)           # or FetchContent_MakeAvailable(...)
  forge_assert_fatbin(vendored_lib)                # or forge_assert_fatbin(ALL) for every one

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
  ``forge_use_wrapper``. The list is a configure-time fact: the policy file and the package's file
  become configure dependencies (editing them reconfigures), and at the end of the top-level
  ``CMakeLists.txt`` every CUDA target whose launcher runs nvcc-forge (``forge_use_wrapper``'s, or
  ``-DCMAKE_CUDA_COMPILER_LAUNCHER="nvcc-forge;sccache"`` from the command line) gets the list and
  package as the wrapper's arguments (``nvcc-forge NVCC_FORGE_ARCH_LIST=... sccache nvcc ...``),
  and its CUDA sources an ``OBJECT_DEPENDS`` on a policy stamp: a changed list recompiles them with
  either generator, and the gate checks the list they were built with. A ``CMAKE_CUDA_COMPILER``
  that is a shim's ``bin/nvcc`` works (the real nvcc is the one its marker names); its bound
  policy file is the stamp.

  A package whose build reads an arch variable of its own (``arch_knobs`` in its package file,
  such as flash-attention's ``FLASH_ATTN_CUDA_ARCHS``) gets it from the resolved list, in the form
  the package reads: a variable of that name in the caller's scope and in the environment of the
  configure step (``ENV``). One the caller already set (``-D``, ``set()`` or the environment) is
  left alone, and the configure log says so; a token the knob cannot express is named there as
  left to the wrapper's injection.

.. command:: forge_assert_fatbin

  .. code-block:: cmake

    forge_assert_fatbin(<target> [ARCH_LIST <list>] [PACKAGE <pkg>] [ALLOW_MISSING <sm_X>...]
                        [ALLOW_PURE_PYTHON] [ALLOW_EXTRA] [MAX_TOOLKIT <SM=X.Y>...]
                        [EXPECT_EXTENSION <glob>...])

  Runs ``nvcc-forge verify`` on ``$<TARGET_FILE:target>`` once the target is built: a target
  whose fatbin does not equal the list fails the build, with the verify table in the build log.
  Without ``ARCH_LIST`` or ``PACKAGE`` it checks against the list ``forge_arch_resolve``
  produced -- never against the target's own ``CUDA_ARCHITECTURES``, which would move both sides of
  the comparison: a target that narrows its own list must fail, not pass. ``EXPECT_EXTENSION``
  globs are passed on as ``--expect-extension``: each must match the file checked.

  ``<target>`` is a static, shared or module library or an executable of this build (an ``ALIAS``
  names its target), created anywhere. One created in the calling directory gets a ``POST_BUILD``
  step, so ``cmake --build --target <target>`` is gated too. One from another directory -- a
  vendored ``add_subdirectory``, ``FetchContent``, which hard-code their own lists more often than
  not -- gets a target ``forge_verify_<target>`` in ``ALL`` that depends on it (CMake allows
  ``POST_BUILD`` only in the target's own directory); it reruns when the binary or the list
  changes. A target is gated once.

  ``forge_assert_fatbin(ALL [<options>])`` gates, with the same options, every shared library,
  module and executable of the build that compiles CUDA (a source whose language is CUDA) or links
  a static or object library of the build that does, as their device code ends up in its binary.
  It runs at the end of the top-level ``CMakeLists.txt`` (``cmake_language(DEFER)``), so it may be
  called before the ``add_subdirectory`` or ``FetchContent_MakeAvailable`` that create the
  targets; a target gated by name keeps its own options. Targets that ``ALL`` does not build
  (``EXCLUDE_FROM_ALL``, or in such a directory) and static libraries (gated through what links
  them) are left out. The configure log lists the gated targets.

.. command:: forge_use_wrapper

  .. code-block:: cmake

    forge_use_wrapper([MODE observe|inject|strict] [LOG <file>])

  Routes the project's CUDA compiles through nvcc-forge by setting ``CMAKE_CUDA_COMPILER_LAUNCHER``
  in the caller's scope (targets created afterwards use it), keeping a launcher already set (such
  as ccache) after nvcc-forge, so a policy change reaches the cache key; an nvcc-forge already in
  that list (by name or by the file it resolves to) is dropped. The settings go on the launcher's
  command line (``nvcc-forge NVCC_FORGE_ARCH_LIST=... NVCC_FORGE_MODE=... ccache``), not in the
  build's environment, which cannot change them. The policy the wrapper compares against is the
  list recorded by ``forge_arch_resolve``. CMake does not run compiler
  launchers on the device-link step; ``-rdc`` projects that need injection there should set
  ``CMAKE_CUDA_COMPILER`` to an nvcc-forge shim instead (``nvcc-forge shim``).

  Subprojects that set their own ``CMAKE_CUDA_COMPILER_LAUNCHER``, or a target's
  ``CUDA_COMPILER_LAUNCHER``, would bypass the variable: at the end of the top-level
  ``CMakeLists.txt`` every target of the build that compiles CUDA gets nvcc-forge in front of its
  own launcher, which is kept after it; the configure log names those targets. What it cannot
  reach is named in a warning: an ``ExternalProject`` is a build of its own (hand it the launcher
  in its ``CMAKE_ARGS``). Compiles outside CMake's targets (``add_custom_command`` running nvcc)
  and targets created later (another deferred call) are not seen.
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
  string(JSON request GET "${json}" arch_list)
  # What the package's build compiles (its target_forms): the list the wrapper injects from and
  # the gate expects (docs/arch-rules.md, "What the wrapper injects").
  string(JSON list GET "${json}" builds_as_list)
  string(JSON source GET "${json}" source)
  string(JSON cmake_list GET "${json}" cmake)
  set_property(GLOBAL PROPERTY FORGE_ARCH_LIST "${list}")
  message(STATUS "forge_arch_resolve: ${request} (from ${source}) -> ${cmake_list}")
  _forge_export_knobs("${json}" knobs)
  foreach(knob IN LISTS knobs)
    set(${knob} "$ENV{${knob}}" PARENT_SCOPE)
  endforeach()
  # The list is a configure-time fact: the files it came from reconfigure the build when they
  # change, and the wrapper's launcher carries it (with the package, for its wrapper settings).
  set(settings "NVCC_FORGE_ARCH_LIST=${list}")
  if(F_PACKAGE)
    list(APPEND settings "NVCC_FORGE_PACKAGE=${F_PACKAGE}")
    if(F_PACKAGES_DIR)
      cmake_path(ABSOLUTE_PATH F_PACKAGES_DIR OUTPUT_VARIABLE dir)
      list(APPEND settings "NVCC_FORGE_PACKAGES_DIR=${dir}")
    endif()
  endif()
  set_property(GLOBAL PROPERTY FORGE_POLICY_SETTINGS "${settings}")
  # Every file the resolution read (the policy, gpus.yml, arch_override.yml, build_matrix.yml)
  # and the directory a package's files are looked for in (a file added there, or the package's
  # directory created later): `inputs` of resolve's JSON.
  string(JSON n_inputs LENGTH "${json}" inputs)
  if(n_inputs GREATER 0)
    math(EXPR last "${n_inputs} - 1")
    foreach(i RANGE ${last})
      string(JSON f GET "${json}" inputs ${i})
      cmake_path(ABSOLUTE_PATH f BASE_DIRECTORY "${CMAKE_BINARY_DIR}")
      if(EXISTS "${f}")
        set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${f}")
      endif()
    endforeach()
  endif()
  if(DEFINED ENV{NVCC_FORGE_ARCH_LIST} AND NOT "$ENV{NVCC_FORGE_ARCH_LIST}" STREQUAL ""
     AND NOT "$ENV{NVCC_FORGE_ARCH_LIST}" STREQUAL "${list}")
    message(WARNING "forge_arch_resolve: NVCC_FORGE_ARCH_LIST in the environment "
                    "('$ENV{NVCC_FORGE_ARCH_LIST}') is not this build's list: the compiles and the "
                    "gate use '${list}'")
  endif()
  _forge_schedule_walk()
  set(${out_var} "${cmake_list}" PARENT_SCOPE)
endfunction()

# The package's own arch knobs (resolve's `arch_knobs`) into the environment; `out` names the
# variables the caller's scope should get. A knob the caller set stays as it is.
function(_forge_export_knobs json out)
  set(exported "")
  string(JSON n LENGTH "${json}" arch_knobs)
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON var GET "${json}" arch_knobs ${i} variable)
      string(JSON type TYPE "${json}" arch_knobs ${i} value)
      if(type STREQUAL "NULL")
        continue()
      endif()
      string(JSON value GET "${json}" arch_knobs ${i} value)
      if(DEFINED ${var} OR DEFINED ENV{${var}})
        message(STATUS "forge_arch_resolve: ${var} is set already: left alone (the list would "
                       "give '${value}')")
        continue()
      endif()
      set(ENV{${var}} "${value}")
      list(APPEND exported "${var}")
      message(STATUS "forge_arch_resolve: ${var}=${value} (the package's own arch knob)")
    endforeach()
  endif()
  string(JSON n LENGTH "${json}" knob_cannot_express)
  if(n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON var GET "${json}" knob_cannot_express ${i} variable)
      string(JSON token GET "${json}" knob_cannot_express ${i} token)
      string(JSON reason GET "${json}" knob_cannot_express ${i} reason)
      message(STATUS "forge_arch_resolve: ${var} cannot express ${token} (${reason}): left to "
                     "the wrapper's injection")
    endforeach()
  endif()
  set(${out} "${exported}" PARENT_SCOPE)
endfunction()

function(forge_assert_fatbin target)
  cmake_parse_arguments(PARSE_ARGV 1 F "ALLOW_PURE_PYTHON;ALLOW_EXTRA" "ARCH_LIST;PACKAGE"
                        "ALLOW_MISSING;MAX_TOOLKIT;EXPECT_EXTENSION")
  if(F_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "forge_assert_fatbin: unknown arguments: ${F_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT target STREQUAL "ALL")
    _forge_gate_check("${target}" target)
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
  set(verify ${CMAKE_COMMAND} -E env ${env} "${exe}" verify)
  if(target STREQUAL "ALL")
    get_property(scheduled GLOBAL PROPERTY FORGE_GATE_ALL_VERIFY SET)
    if(scheduled)
      message(FATAL_ERROR "forge_assert_fatbin(ALL): called twice")
    endif()
    set_property(GLOBAL PROPERTY FORGE_GATE_ALL_VERIFY "${verify}")
    set_property(GLOBAL PROPERTY FORGE_GATE_ALL_ARGS "${args}")
    # Targets created after this call (later add_subdirectory, FetchContent) count too.
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _forge_gate_all)
  else()
    _forge_gate("${target}" "${verify}" "${args}")
  endif()
endfunction()

# Resolves an ALIAS and refuses what has no binary of its own to verify.
function(_forge_gate_check target out)
  if(NOT TARGET "${target}")
    message(FATAL_ERROR "forge_assert_fatbin: '${target}' is not a target")
  endif()
  get_target_property(real "${target}" ALIASED_TARGET)
  if(real)
    set(target "${real}")
  endif()
  get_target_property(type "${target}" TYPE)
  get_target_property(imported "${target}" IMPORTED)
  if(imported)
    set(type "imported ${type}")
  endif()
  if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|EXECUTABLE)$")
    message(FATAL_ERROR "forge_assert_fatbin: '${target}' (${type}) is not a library or "
                        "executable this build links: there is no binary to verify")
  endif()
  set(${out} "${target}" PARENT_SCOPE)
endfunction()

# One verify step per target, after the target is built; a failure fails the build.
function(_forge_gate target verify args)
  get_property(gated GLOBAL PROPERTY FORGE_GATED_TARGETS)
  if(target IN_LIST gated)
    message(FATAL_ERROR "forge_assert_fatbin(${target}): the target is already gated")
  endif()
  set_property(GLOBAL APPEND PROPERTY FORGE_GATED_TARGETS "${target}")
  set(command ${verify} "$<TARGET_FILE:${target}>" ${args})
  get_target_property(dir "${target}" BINARY_DIR)
  if(dir STREQUAL CMAKE_CURRENT_BINARY_DIR)
    # POST_BUILD also gates `cmake --build --target <target>`.
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${command}
      COMMENT "nvcc-forge verify ${target}"
      VERBATIM)
    return()
  endif()
  # add_custom_command(TARGET) is refused outside the target's own directory, so a target from
  # add_subdirectory or FetchContent gets a gate target in ALL. Its stamp is written only when
  # verify passed; both generators rerun a custom command whose text changed (a new list).
  set(stamp "${CMAKE_CURRENT_BINARY_DIR}/forge_verify_${target}$<CONFIG>.stamp")
  add_custom_command(OUTPUT "${stamp}"
    COMMAND ${command}
    COMMAND ${CMAKE_COMMAND} -E touch "${stamp}"
    DEPENDS ${target}
    COMMENT "nvcc-forge verify ${target}"
    VERBATIM)
  add_custom_target(forge_verify_${target} ALL DEPENDS "${stamp}")
endfunction()

# The build-system targets of <dir> and the directories below it; SKIP_EXCLUDED leaves out
# directories added with EXCLUDE_FROM_ALL.
function(_forge_all_targets out dir skip_excluded)
  get_property(targets DIRECTORY "${dir}" PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY "${dir}" PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    get_property(excluded DIRECTORY "${sub}" PROPERTY EXCLUDE_FROM_ALL)
    if(skip_excluded AND excluded)
      continue()
    endif()
    _forge_all_targets(below "${sub}" ${skip_excluded})
    list(APPEND targets ${below})
  endforeach()
  set(${out} "${targets}" PARENT_SCOPE)
endfunction()

# Whether <target> compiles CUDA: a source with LANGUAGE CUDA (or a .cu name), its
# $<TARGET_OBJECTS:...> and, with <linked>, the static and object libraries it links, whose device
# code ends up in its binary. <seen> breaks cycles between static libraries.
function(_forge_has_cuda out target linked seen)
  set(${out} FALSE PARENT_SCOPE)
  get_target_property(sources "${target}" SOURCES)
  get_target_property(source_dir "${target}" SOURCE_DIR)
  set(deps "")
  foreach(src IN LISTS sources)
    if(src MATCHES "^\\$<TARGET_OBJECTS:([^>]+)>$")
      list(APPEND deps "${CMAKE_MATCH_1}")
      continue()
    elseif(src MATCHES "^\\$<")
      continue()
    endif()
    if(src MATCHES "\\.cu$")
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${source_dir}" OUTPUT_VARIABLE path)
    get_source_file_property(lang "${path}" TARGET_DIRECTORY "${target}" LANGUAGE)
    if(lang STREQUAL "CUDA")
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
  if(linked)
    get_target_property(libs "${target}" LINK_LIBRARIES)
    if(libs)
      list(APPEND deps ${libs})
    endif()
  endif()
  list(APPEND seen "${target}")
  foreach(dep IN LISTS deps)
    if(NOT TARGET "${dep}")
      continue()
    endif()
    get_target_property(real "${dep}" ALIASED_TARGET)
    if(real)
      set(dep "${real}")
    endif()
    get_target_property(type "${dep}" TYPE)
    get_target_property(imported "${dep}" IMPORTED)
    if(imported OR dep IN_LIST seen OR NOT type MATCHES "^(STATIC|OBJECT)_LIBRARY$")
      continue()
    endif()
    _forge_has_cuda(cuda "${dep}" "${linked}" "${seen}")
    if(cuda)
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
    list(APPEND seen "${dep}")
  endforeach()
endfunction()

# forge_assert_fatbin(ALL), run at the end of the top-level directory.
function(_forge_gate_all)
  get_property(verify GLOBAL PROPERTY FORGE_GATE_ALL_VERIFY)
  get_property(args GLOBAL PROPERTY FORGE_GATE_ALL_ARGS)
  get_property(gated_before GLOBAL PROPERTY FORGE_GATED_TARGETS)
  _forge_all_targets(targets "${CMAKE_SOURCE_DIR}" TRUE)
  set(gated "")
  foreach(target IN LISTS targets)
    get_target_property(type "${target}" TYPE)
    get_target_property(excluded "${target}" EXCLUDE_FROM_ALL)
    if(excluded OR target IN_LIST gated_before
       OR NOT type MATCHES "^(SHARED_LIBRARY|MODULE_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    _forge_has_cuda(cuda "${target}" TRUE "")
    if(cuda)
      _forge_gate("${target}" "${verify}" "${args}")
      list(APPEND gated "${target}")
    endif()
  endforeach()
  if(gated)
    list(JOIN gated ", " names)
    message(STATUS "forge_assert_fatbin(ALL): gating ${names}")
  elseif(gated_before)
    list(JOIN gated_before ", " names)
    message(STATUS "forge_assert_fatbin(ALL): nothing more to gate (by name: ${names})")
  else()
    message(WARNING "forge_assert_fatbin(ALL): no shared library, module or executable with CUDA "
                    "sources in this build: nothing is gated")
  endif()
endfunction()

function(forge_use_wrapper)
  cmake_parse_arguments(PARSE_ARGV 0 F "" "MODE;LOG" "")
  if(F_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "forge_use_wrapper: unknown arguments: ${F_UNPARSED_ARGUMENTS}")
  endif()
  if(F_MODE AND NOT F_MODE MATCHES "^(observe|inject|strict)$")
    message(FATAL_ERROR "forge_use_wrapper: MODE must be observe, inject or strict, not '${F_MODE}'")
  endif()
  set(settings "")
  if(F_MODE)
    list(APPEND settings "NVCC_FORGE_MODE=${F_MODE}")
  endif()
  if(F_LOG)
    list(APPEND settings "NVCC_FORGE_LOG=${F_LOG}")
  endif()
  set_property(GLOBAL PROPERTY FORGE_WRAPPER_SETTINGS "${settings}")
  set_property(GLOBAL PROPERTY FORGE_WRAP_ALL TRUE)
  _forge_launcher_compose(launcher "${CMAKE_CUDA_COMPILER_LAUNCHER}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${launcher}" PARENT_SCOPE)
  # A subproject that sets its own CMAKE_CUDA_COMPILER_LAUNCHER (or a target's
  # CUDA_COMPILER_LAUNCHER) replaces the variable above; the walk at the end of the top-level
  # directory puts nvcc-forge back in front of every such target.
  _forge_schedule_walk()
endfunction()

function(_forge_schedule_walk)
  get_property(scheduled GLOBAL PROPERTY FORGE_WRAP_ALL_SCHEDULED)
  if(NOT scheduled)
    set_property(GLOBAL PROPERTY FORGE_WRAP_ALL_SCHEDULED TRUE)
    cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _forge_wrap_all)
  endif()
endfunction()

# The launcher nvcc-forge runs as: the program, then the build's settings as arguments
# (NVCC_FORGE_<NAME>=VALUE): the configure-time policy of forge_arch_resolve, the MODE and LOG of
# forge_use_wrapper, else the NVCC_FORGE_MODE of the configure environment. On the command line,
# ninja's command hash and every cache behind the wrapper see them; the environment of the build
# cannot change them behind the build's back.
function(_forge_launcher out)
  _forge_find_executable(exe)
  get_property(policy GLOBAL PROPERTY FORGE_POLICY_SETTINGS)
  get_property(wrapper GLOBAL PROPERTY FORGE_WRAPPER_SETTINGS)
  set(mode "${wrapper}")
  list(FILTER mode INCLUDE REGEX "^NVCC_FORGE_MODE=")
  if(NOT mode AND DEFINED ENV{NVCC_FORGE_MODE} AND NOT "$ENV{NVCC_FORGE_MODE}" STREQUAL "")
    list(APPEND wrapper "NVCC_FORGE_MODE=$ENV{NVCC_FORGE_MODE}")
  endif()
  set(${out} "${exe}" ${policy} ${wrapper} PARENT_SCOPE)
endfunction()

# Whether <element> of a launcher list is nvcc-forge: by name, or by the file it resolves to
# (a bare name is looked up on PATH as the build would).
function(_forge_is_wrapper out element)
  set(${out} FALSE PARENT_SCOPE)
  cmake_path(GET element FILENAME name)
  if(name STREQUAL "nvcc-forge")
    set(${out} TRUE PARENT_SCOPE)
    return()
  endif()
  if(element MATCHES "^NVCC_FORGE_|^-")
    return()
  endif()
  set(path "${element}")
  if(NOT IS_ABSOLUTE "${element}")
    find_program(_forge_launcher_element "${element}" NO_CACHE)
    set(path "${_forge_launcher_element}")
  endif()
  _forge_find_executable(exe)
  if(path AND EXISTS "${path}")
    file(REAL_PATH "${path}" a)
    file(REAL_PATH "${exe}" b)
    if(a STREQUAL b)
      set(${out} TRUE PARENT_SCOPE)
    endif()
  endif()
endfunction()

# nvcc-forge's launcher followed by <existing> (ccache, sccache, a project's own), which then sees
# the final flags, so a policy change reaches the cache key. An nvcc-forge already in <existing>
# (found by name or by the file it resolves to, with a `cmake -E env` in front of it) is dropped;
# of its settings, this configure's win.
function(_forge_launcher_compose out existing)
  _forge_launcher(launcher)
  set(kept "")
  set(skip_settings FALSE)
  foreach(element IN LISTS existing)
    if(skip_settings AND element MATCHES "^(NVCC_FORGE_[A-Z_]+)=")
      # The dropped wrapper's own settings stay where this configure sets nothing of that name
      # (a MODE given on the command line's launcher).
      if(NOT launcher MATCHES "(^|;)${CMAKE_MATCH_1}=")
        list(APPEND launcher "${element}")
      endif()
      continue()
    endif()
    set(skip_settings FALSE)
    _forge_is_wrapper(is_wrapper "${element}")
    if(is_wrapper)
      set(skip_settings TRUE)
      # `cmake -E env VAR=... nvcc-forge` (the form before settings were arguments).
      list(LENGTH kept n)
      if(n GREATER_EQUAL 3)
        list(GET kept 1 e1)
        list(GET kept 2 e2)
        if(e1 STREQUAL "-E" AND e2 STREQUAL "env")
          set(kept "")
        endif()
      endif()
      continue()
    endif()
    list(APPEND kept "${element}")
  endforeach()
  set(${out} ${launcher} ${kept} PARENT_SCOPE)
endfunction()

# Whether <launcher> (a list) runs nvcc-forge.
function(_forge_has_wrapper out launcher)
  set(${out} FALSE PARENT_SCOPE)
  foreach(element IN LISTS launcher)
    _forge_is_wrapper(is_wrapper "${element}")
    if(is_wrapper)
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# The CUDA sources of <target>, as paths (for OBJECT_DEPENDS).
function(_forge_cuda_sources out target)
  get_target_property(sources "${target}" SOURCES)
  get_target_property(source_dir "${target}" SOURCE_DIR)
  set(found "")
  foreach(src IN LISTS sources)
    if(src MATCHES "^\\$<")
      continue()
    endif()
    cmake_path(ABSOLUTE_PATH src BASE_DIRECTORY "${source_dir}" OUTPUT_VARIABLE path)
    get_source_file_property(lang "${path}" TARGET_DIRECTORY "${target}" LANGUAGE)
    if(src MATCHES "\\.cu$" OR lang STREQUAL "CUDA")
      list(APPEND found "${path}")
    endif()
  endforeach()
  set(${out} "${found}" PARENT_SCOPE)
endfunction()

# The file the CUDA objects depend on for the policy: a shim compiler's policy file (rewritten
# when the shim is bound to another policy), else one this configure writes when its settings
# change. A generator that does not hash commands (Unix Makefiles) then recompiles on a change too.
function(_forge_policy_stamp out)
  set(${out} "" PARENT_SCOPE)
  if(CMAKE_CUDA_COMPILER)
    cmake_path(GET CMAKE_CUDA_COMPILER PARENT_PATH dir)
    if(EXISTS "${dir}/.nvcc-forge-real")
      if(EXISTS "${dir}/.nvcc-forge-policy")
        set(${out} "${dir}/.nvcc-forge-policy" PARENT_SCOPE)
      endif()
      return()
    endif()
  endif()
  _forge_launcher(launcher)
  set(stamp "${CMAKE_BINARY_DIR}/CMakeFiles/nvcc-forge-policy.txt")
  set(text "")
  if(EXISTS "${stamp}")
    file(READ "${stamp}" text)
  endif()
  list(JOIN launcher "\n" want)
  if(NOT text STREQUAL "${want}\n")
    file(WRITE "${stamp}" "${want}\n")
  endif()
  set(${out} "${stamp}" PARENT_SCOPE)
endfunction()

# CMAKE_CUDA_COMPILER a shim's nvcc: the policy it is bound to is what the compiles get; the
# configure reruns when it is bound again, and says when it is not the list the gate checks.
function(_forge_shim_check)
  if(NOT CMAKE_CUDA_COMPILER)
    return()
  endif()
  cmake_path(GET CMAKE_CUDA_COMPILER PARENT_PATH dir)
  if(NOT EXISTS "${dir}/.nvcc-forge-real")
    return()
  endif()
  get_property(list GLOBAL PROPERTY FORGE_ARCH_LIST)
  # `env --shim ROOT` binds ROOT/.policies/<id> and exports it as CUDA_HOME (frontend/shim.h).
  cmake_path(GET dir PARENT_PATH root)
  cmake_path(GET root PARENT_PATH parent)
  cmake_path(GET parent FILENAME parent_name)
  if(parent_name STREQUAL ".policies")
    cmake_path(GET parent PARENT_PATH root)
  endif()
  string(CONCAT bind "eval \"$(nvcc-forge env --arch-list '${list}' --shim ${root})\" and "
                "configure with -DCMAKE_CUDA_COMPILER=\"$CUDA_HOME/bin/nvcc\"")
  if(NOT EXISTS "${dir}/.nvcc-forge-policy")
    message(WARNING "ForgeArch: CMAKE_CUDA_COMPILER is an unbound nvcc-forge shim: a compiler "
                    "cache in front of it cannot see the policy. Bind one: ${bind}")
    return()
  endif()
  set_property(DIRECTORY "${CMAKE_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               "${dir}/.nvcc-forge-policy")
  file(STRINGS "${dir}/.nvcc-forge-policy" bound REGEX "^NVCC_FORGE_ARCH_LIST=")
  string(REPLACE "NVCC_FORGE_ARCH_LIST=" "" bound "${bound}")
  if(list AND NOT bound STREQUAL list)
    message(WARNING "ForgeArch: the shim ${dir}/.. is bound to '${bound}', forge_arch_resolve "
                    "gave '${list}': the gate will fail. Bind one to this build's list: ${bind}")
  endif()
endfunction()

# forge_use_wrapper's walk over every target, run at the end of the top-level directory (also
# after forge_arch_resolve alone: a launcher list that already runs nvcc-forge, the project's or
# the command line's, gets the configure-time policy). Every wrapped CUDA source depends on the
# policy stamp.
function(_forge_wrap_all)
  get_property(wrap_all GLOBAL PROPERTY FORGE_WRAP_ALL)
  _forge_shim_check()
  _forge_policy_stamp(stamp)
  _forge_all_targets(targets "${CMAKE_SOURCE_DIR}" FALSE)
  set(kept "")
  set(unreached "")
  foreach(target IN LISTS targets)
    get_target_property(type "${target}" TYPE)
    # ExternalProject_Add records its directories as _EP_* properties of its target.
    get_property(external TARGET "${target}" PROPERTY _EP_SOURCE_DIR SET)
    if(type STREQUAL "UTILITY" AND external AND wrap_all)
      list(APPEND unreached "${target} (ExternalProject: a build of its own, pass it \
-DCMAKE_CUDA_COMPILER_LAUNCHER in CMAKE_ARGS)")
      continue()
    endif()
    if(NOT type MATCHES "^(STATIC_LIBRARY|SHARED_LIBRARY|MODULE_LIBRARY|OBJECT_LIBRARY|EXECUTABLE)$")
      continue()
    endif()
    _forge_has_cuda(cuda "${target}" FALSE "")
    if(NOT cuda)
      continue()
    endif()
    get_target_property(own "${target}" CUDA_COMPILER_LAUNCHER)
    if(NOT own)
      set(own "")
    endif()
    _forge_has_wrapper(wrapped "${own}")
    if(stamp AND (wrap_all OR wrapped OR stamp MATCHES "/\\.nvcc-forge-policy$"))
      _forge_cuda_sources(sources "${target}")
      set_property(SOURCE ${sources} TARGET_DIRECTORY "${target}" APPEND PROPERTY
                   OBJECT_DEPENDS "${stamp}")
    endif()
    if(NOT wrap_all AND NOT wrapped)
      continue()
    endif()
    _forge_launcher_compose(launcher "${own}")
    if(NOT launcher STREQUAL own AND wrapped AND NOT wrap_all)
      set_property(TARGET "${target}" PROPERTY CUDA_COMPILER_LAUNCHER "${launcher}")
      list(APPEND kept "${target} (its nvcc-forge launcher given the configure-time settings)")
    elseif(NOT launcher STREQUAL own)
      set_property(TARGET "${target}" PROPERTY CUDA_COMPILER_LAUNCHER "${launcher}")
      if(own)
        list(JOIN own " " own)
        list(APPEND kept "${target} (its launcher '${own}' kept after nvcc-forge)")
      else()
        list(APPEND kept "${target} (had no launcher)")
      endif()
    endif()
  endforeach()
  if(kept)
    list(JOIN kept ", " names)
    message(STATUS "forge_use_wrapper: launcher set on targets the variable did not reach: "
                   "${names}")
  endif()
  if(unreached)
    list(JOIN unreached ", " names)
    message(WARNING "forge_use_wrapper: could not reach: ${names}")
  endif()
endfunction()
