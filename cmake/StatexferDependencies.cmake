# Kokkos and Kokkos Kernels.
#
# Three ways to a Kokkos, in this order:
#  1. Kokkos_ROOT or Kokkos_DIR set: the user's installed Kokkos (3.4 or 4.x).
#  2. STATEXFER_KOKKOS_SOURCE set: a Kokkos source the user names (a release
#     tarball or a source folder), copied under STATEXFER_DEPS_DIR, patched with
#     cmake/patches/kokkos-<version>-*.patch and built there.
#  3. Otherwise Kokkos 3.4.01 and Kokkos Kernels 3.4.01 from Debian's `trilinos`
#     source package (cmake/fetch-kokkos.sh), patched the same way.
# Built installs live under STATEXFER_DEPS_DIR, one per source, patch set and
# backend set, and are reused by every build folder that asks for the same.
#
# STATEXFER_DEPS_DIR is outside the source tree by default, in the user's cache
# folder, so that every clone and build folder of one user shares the Kokkos
# builds (a clean clone, as CI takes, finds the developer's): the environment
# variable of that name, else $XDG_CACHE_HOME/statexfer/deps, else
# ~/.cache/statexfer/deps, else .deps in the source tree.
if(NOT "$ENV{STATEXFER_DEPS_DIR}" STREQUAL "")
  set(_statexfer_deps_default "$ENV{STATEXFER_DEPS_DIR}")
elseif(NOT "$ENV{XDG_CACHE_HOME}" STREQUAL "")
  set(_statexfer_deps_default "$ENV{XDG_CACHE_HOME}/statexfer/deps")
elseif(NOT "$ENV{HOME}" STREQUAL "")
  set(_statexfer_deps_default "$ENV{HOME}/.cache/statexfer/deps")
else()
  set(_statexfer_deps_default "${PROJECT_SOURCE_DIR}/.deps")
endif()
set(STATEXFER_DEPS_DIR "${_statexfer_deps_default}" CACHE PATH
    "Where the bundled Kokkos sources and installs are kept (shared by every clone and build folder)")
set(STATEXFER_KOKKOS_SOURCE "" CACHE STRING
    "A Kokkos source to build instead of the bundled 3.4.01: a release tarball (.tar.gz, .tar.xz, .zip) or a source folder")
set(STATEXFER_KOKKOS_REQUIRE_VERSION "" CACHE STRING
    "Refuse any Kokkos whose version does not start with this (for example 4 or 4.6.01); empty: any 3.4 or newer")

function(_statexfer_run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "statexfer: ${what} failed (exit ${rc}); see the output above")
  endif()
endfunction()

# Configure, build and install one bundled CMake project unless an identical
# install is there already. Sets ${out_prefix} to the install prefix.
function(_statexfer_bundled_install name source_dir key out_prefix)
  string(SHA1 hash "${key}")
  string(SUBSTRING "${hash}" 0 12 hash)
  set(prefix "${STATEXFER_DEPS_DIR}/install/${name}-${hash}")
  set(${out_prefix} "${prefix}" PARENT_SCOPE)
  if(EXISTS "${prefix}/.complete")
    return()
  endif()
  # One configure at a time builds a given install; others wait for it and
  # take it. Different installs build side by side.
  file(MAKE_DIRECTORY "${STATEXFER_DEPS_DIR}/install")
  file(LOCK "${prefix}.lock" GUARD FUNCTION TIMEOUT 7200)
  if(EXISTS "${prefix}/.complete")
    return()
  endif()
  set(build_dir "${STATEXFER_DEPS_DIR}/build/${name}-${hash}")
  file(REMOVE_RECURSE "${build_dir}" "${prefix}")
  message(STATUS "statexfer: building bundled ${name} into ${prefix}")
  cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
  _statexfer_run("configuring ${name}"
    ${CMAKE_COMMAND} -S "${source_dir}" -B "${build_dir}" -G "${CMAKE_GENERATOR}"
      -DCMAKE_INSTALL_PREFIX=${prefix} -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DCMAKE_INSTALL_MESSAGE=NEVER ${ARGN})
  _statexfer_run("building ${name}" ${CMAKE_COMMAND} --build "${build_dir}" --parallel ${cores})
  _statexfer_run("installing ${name}" ${CMAKE_COMMAND} --install "${build_dir}")
  file(TOUCH "${prefix}/.complete")
  file(REMOVE_RECURSE "${build_dir}")
endfunction()

# The release a Kokkos source tree declares in its top CMakeLists.txt, written
# as Kokkos names its releases: 3.4.01, 4.6.01.
function(_statexfer_kokkos_source_version dir out)
  file(STRINGS "${dir}/CMakeLists.txt" lines REGEX "^[ \t]*set\\(Kokkos_VERSION_(MAJOR|MINOR|PATCH) [0-9]+\\)")
  foreach(part MAJOR MINOR PATCH)
    set(${part} "")
    foreach(line IN LISTS lines)
      if(line MATCHES "Kokkos_VERSION_${part} ([0-9]+)")
        math(EXPR ${part} "${CMAKE_MATCH_1} + 0")
      endif()
    endforeach()
    if(${part} STREQUAL "")
      message(FATAL_ERROR "statexfer: STATEXFER_KOKKOS_SOURCE: no Kokkos version in ${dir}/CMakeLists.txt; "
                          "is this a Kokkos source tree?")
    endif()
  endforeach()
  if(PATCH LESS 10)
    set(PATCH "0${PATCH}")
  endif()
  set(${out} "${MAJOR}.${MINOR}.${PATCH}" PARENT_SCOPE)
endfunction()

# The key of the project's patches for one Kokkos release.
function(_statexfer_patch_key version out)
  file(GLOB patches "${PROJECT_SOURCE_DIR}/cmake/patches/kokkos-${version}-*.patch")
  list(SORT patches)
  set(text "${version}")
  foreach(p IN LISTS patches)
    file(READ "${p}" body)
    string(APPEND text "${body}")
  endforeach()
  string(SHA256 key "${text}")
  string(SUBSTRING "${key}" 0 16 key)
  set(${out} "${key}" PARENT_SCOPE)
endfunction()

# Copy the named Kokkos source (tarball or folder) under STATEXFER_DEPS_DIR and
# apply cmake/patches/kokkos-<version>-*.patch; nothing is redone while the
# source and the patches are unchanged. Sets ${out_dir} to the patched tree,
# ${out_version} to its release and ${out_stamp} to a key of source and patches.
function(_statexfer_kokkos_from_source source out_dir out_version out_stamp)
  get_filename_component(source "${source}" ABSOLUTE BASE_DIR "${PROJECT_SOURCE_DIR}")
  if(IS_DIRECTORY "${source}")
    if(NOT EXISTS "${source}/CMakeLists.txt")
      message(FATAL_ERROR "statexfer: STATEXFER_KOKKOS_SOURCE=${source} is a folder without a CMakeLists.txt")
    endif()
    # A folder can change under us: key it on its path and its top-level entries.
    file(GLOB listing RELATIVE "${source}" "${source}/*")
    string(SHA256 source_key "${source};${listing}")
  elseif(EXISTS "${source}")
    file(SHA256 "${source}" source_key)
  else()
    message(FATAL_ERROR "statexfer: STATEXFER_KOKKOS_SOURCE=${source} does not exist "
                        "(give a Kokkos release tarball such as kokkos-4.6.01.tar.gz, or a source folder)")
  endif()
  string(SUBSTRING "${source_key}" 0 12 source_key)
  set(root "${STATEXFER_DEPS_DIR}/src/kokkos-${source_key}")
  if(EXISTS "${root}/.stamp")
    file(STRINGS "${root}/.stamp" stamp)
    list(GET stamp 0 version)
    _statexfer_patch_key("${version}" patch_key)
    if(NOT stamp STREQUAL "${version};${patch_key}")
      message(STATUS "statexfer: the patches of Kokkos ${version} changed; extracting ${source} again")
      file(REMOVE_RECURSE "${root}")
    endif()
  endif()
  if(NOT EXISTS "${root}/.stamp")
    set(staging "${root}.staging")
    file(REMOVE_RECURSE "${root}" "${staging}")
    file(MAKE_DIRECTORY "${staging}")
    if(IS_DIRECTORY "${source}")
      file(COPY "${source}/" DESTINATION "${staging}/kokkos" PATTERN ".git" EXCLUDE)
    else()
      message(STATUS "statexfer: extracting ${source}")
      file(ARCHIVE_EXTRACT INPUT "${source}" DESTINATION "${staging}/extract")
      file(GLOB tops LIST_DIRECTORIES true "${staging}/extract/*")
      list(LENGTH tops ntops)
      if(ntops EQUAL 1 AND IS_DIRECTORY "${tops}")
        file(RENAME "${tops}" "${staging}/kokkos")
      else()
        file(RENAME "${staging}/extract" "${staging}/kokkos")
      endif()
      file(REMOVE_RECURSE "${staging}/extract")
    endif()
    if(NOT EXISTS "${staging}/kokkos/CMakeLists.txt")
      message(FATAL_ERROR "statexfer: ${source} holds no Kokkos source tree (no CMakeLists.txt at its top)")
    endif()
    _statexfer_kokkos_source_version("${staging}/kokkos" version)
    file(GLOB patches "${PROJECT_SOURCE_DIR}/cmake/patches/kokkos-${version}-*.patch")
    list(SORT patches)
    if(NOT patches)
      message(STATUS "statexfer: no patches for Kokkos ${version} in cmake/patches (built as it is)")
    endif()
    find_program(STATEXFER_PATCH_EXECUTABLE patch)
    if(patches AND NOT STATEXFER_PATCH_EXECUTABLE)
      message(FATAL_ERROR "statexfer: applying the patches of Kokkos ${version} needs `patch` (Debian: patch)")
    endif()
    foreach(p IN LISTS patches)
      get_filename_component(name "${p}" NAME)
      message(STATUS "statexfer: applying ${name}")
      _statexfer_run("applying ${name}" ${STATEXFER_PATCH_EXECUTABLE} -s -p1 -d "${staging}" -i "${p}")
    endforeach()
    _statexfer_patch_key("${version}" patch_key)
    file(RENAME "${staging}" "${root}")
    file(WRITE "${root}/.stamp" "${version}\n${patch_key}\n")
  endif()
  file(STRINGS "${root}/.stamp" stamp)
  list(GET stamp 0 version)
  set(${out_dir} "${root}/kokkos" PARENT_SCOPE)
  set(${out_version} "${version}" PARENT_SCOPE)
  set(${out_stamp} "${source_key};${stamp}" PARENT_SCOPE)
endfunction()

# The -D options of a bundled Kokkos build for STATEXFER_KOKKOS_BACKENDS.
function(_statexfer_kokkos_args version out)
  # 3.4 takes the standard as Kokkos_CXX_STANDARD, 4.x refuses it for CMAKE_CXX_STANDARD.
  if(version VERSION_LESS 4.0)
    set(args -DKokkos_CXX_STANDARD=17)
  else()
    set(args -DCMAKE_CXX_STANDARD=17)
  endif()
  list(APPEND args -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF)
  foreach(backend IN LISTS STATEXFER_KOKKOS_BACKENDS)
    string(TOUPPER "${backend}" backend)
    if(NOT backend MATCHES "^(SERIAL|OPENMP|THREADS|CUDA|HIP)$")
      message(FATAL_ERROR "statexfer: STATEXFER_KOKKOS_BACKENDS: unknown backend '${backend}' "
                          "(SERIAL, OPENMP, THREADS, CUDA, HIP)")
    endif()
    if(backend STREQUAL "THREADS" AND version VERSION_LESS 4.0)
      list(APPEND args -DKokkos_ENABLE_PTHREAD=ON)  # 3.x's name of the Threads backend
    else()
      list(APPEND args -DKokkos_ENABLE_${backend}=ON)
    endif()
    if(backend STREQUAL "CUDA")
      if(NOT STATEXFER_CUDA_ARCH MATCHES "^(HOPPER90|AMPERE80)$")
        message(FATAL_ERROR "statexfer: STATEXFER_CUDA_ARCH must be HOPPER90 or AMPERE80, got '${STATEXFER_CUDA_ARCH}'")
      endif()
      if(version VERSION_LESS 4.0)
        list(APPEND args -DKokkos_ENABLE_CUDA_LAMBDA=ON)  # always on from 4.0
      endif()
      list(APPEND args -DKokkos_ARCH_${STATEXFER_CUDA_ARCH}=ON)
    elseif(backend STREQUAL "HIP")
      # Kokkos 3.4's HIP backend predates the ROCm releases Debian packages.
      if(version VERSION_LESS 4.0)
        message(FATAL_ERROR "statexfer: the HIP backend needs Kokkos 4 (STATEXFER_KOKKOS_SOURCE, for example "
                            "kokkos-4.6.01.tar.gz; the hip preset reads it from the environment), not ${version}")
      endif()
      if(STATEXFER_HIP_ARCH STREQUAL "AMD_GFX942")
        message(FATAL_ERROR "statexfer: STATEXFER_HIP_ARCH=AMD_GFX942 (MI300) needs LLVM 17 or newer; Debian "
                            "bookworm's hipcc (ROCm 5.2.3) wraps clang 15, which has no gfx942. AMD_GFX90A is offered.")
      elseif(NOT STATEXFER_HIP_ARCH STREQUAL "AMD_GFX90A")
        message(FATAL_ERROR "statexfer: STATEXFER_HIP_ARCH must be AMD_GFX90A (MI200/MI250X), got '${STATEXFER_HIP_ARCH}'")
      endif()
      if(NOT CMAKE_CXX_COMPILER MATCHES "hipcc")
        message(FATAL_ERROR "statexfer: the HIP backend is built with hipcc as the C++ compiler "
                            "(-DCMAKE_CXX_COMPILER=hipcc; Debian: apt-get install hipcc, or tools/setup --hip), "
                            "got ${CMAKE_CXX_COMPILER}")
      endif()
      # rocThrust is not packaged by Debian; Kokkos only uses it to sort whole Views.
      list(APPEND args -DKokkos_ARCH_${STATEXFER_HIP_ARCH}=ON -DKokkos_ENABLE_ROCTHRUST=OFF)
    endif()
  endforeach()
  separate_arguments(extra UNIX_COMMAND "${STATEXFER_KOKKOS_OPTIONS}")
  list(APPEND args ${extra})
  set(${out} "${args}" PARENT_SCOPE)
endfunction()

# Kokkos_DIR is cached by find_package: only one the user set names their Kokkos.
set(_statexfer_user_kokkos OFF)
if(DEFINED Kokkos_ROOT OR DEFINED ENV{Kokkos_ROOT})
  set(_statexfer_user_kokkos ON)
elseif(DEFINED Kokkos_DIR AND NOT "${Kokkos_DIR}" STREQUAL "$CACHE{STATEXFER_BUILT_KOKKOS_DIR}")
  # A Kokkos_DIR under our own installs is one an earlier configure built.
  string(FIND "${Kokkos_DIR}" "${STATEXFER_DEPS_DIR}/install/" _statexfer_ours)
  if(NOT _statexfer_ours EQUAL 0)
    set(_statexfer_user_kokkos ON)
  endif()
endif()
if(_statexfer_user_kokkos)
  set(STATEXFER_KOKKOS_ORIGIN "installed")
  if(STATEXFER_KOKKOS_SOURCE)
    message(FATAL_ERROR "statexfer: give either an installed Kokkos (Kokkos_ROOT/Kokkos_DIR) or a source to build "
                        "(STATEXFER_KOKKOS_SOURCE=${STATEXFER_KOKKOS_SOURCE}), not both")
  endif()
  find_package(Kokkos REQUIRED CONFIG)
else()
  if(STATEXFER_KOKKOS_SOURCE STREQUAL "" AND NOT STATEXFER_KOKKOS_REQUIRE_VERSION STREQUAL ""
     AND NOT "3.4.01" MATCHES "^${STATEXFER_KOKKOS_REQUIRE_VERSION}")
    message(FATAL_ERROR "statexfer: this configuration needs Kokkos ${STATEXFER_KOKKOS_REQUIRE_VERSION} "
                        "(STATEXFER_KOKKOS_REQUIRE_VERSION) but names no source for it: set STATEXFER_KOKKOS_SOURCE, "
                        "in the environment or with -D, to a Kokkos release tarball or source folder "
                        "(for example kokkos-4.6.01.tar.gz), or Kokkos_ROOT to an installed Kokkos")
  endif()
  file(MAKE_DIRECTORY "${STATEXFER_DEPS_DIR}")
  # One configure at a time fetches or extracts sources into the shared folder.
  file(LOCK "${STATEXFER_DEPS_DIR}/.lock" TIMEOUT 3600)
  if(STATEXFER_KOKKOS_SOURCE)
    set(STATEXFER_KOKKOS_ORIGIN "source")
    _statexfer_kokkos_from_source("${STATEXFER_KOKKOS_SOURCE}" _kokkos_src _kokkos_version _stamp)
    set(_kokkos_name kokkos-${_kokkos_version})
  else()
    set(STATEXFER_KOKKOS_ORIGIN "bundled")
    set(_src "${STATEXFER_DEPS_DIR}/src")
    _statexfer_run("fetching Kokkos 3.4.01 (cmake/fetch-kokkos.sh)"
      bash "${PROJECT_SOURCE_DIR}/cmake/fetch-kokkos.sh" "${_src}" "${PROJECT_SOURCE_DIR}/cmake/patches")
    file(READ "${_src}/.stamp" _stamp)
    set(_kokkos_src "${_src}/kokkos")
    set(_kokkos_version 3.4.01)
    set(_kokkos_name kokkos)
  endif()
  file(LOCK "${STATEXFER_DEPS_DIR}/.lock" RELEASE)
  _statexfer_kokkos_args(${_kokkos_version} _kokkos_args)
  _statexfer_bundled_install(${_kokkos_name} "${_kokkos_src}" "${_stamp};${CMAKE_CXX_COMPILER};${_kokkos_args}"
                             _kokkos_prefix ${_kokkos_args})
  set(Kokkos_DIR "${_kokkos_prefix}/lib/cmake/Kokkos" CACHE PATH "The Kokkos statexfer built" FORCE)
  set(STATEXFER_BUILT_KOKKOS_DIR "${Kokkos_DIR}" CACHE INTERNAL "")
  find_package(Kokkos REQUIRED CONFIG PATHS "${_kokkos_prefix}" NO_DEFAULT_PATH)
endif()

# The API statexfer is written to is the one 3.4 and 4.x share. Kokkos 3.4's
# version file rejects ranges, so the floor is checked here.
if(Kokkos_VERSION VERSION_LESS 3.4)
  message(FATAL_ERROR "statexfer needs Kokkos 3.4 or newer, found ${Kokkos_VERSION} at ${Kokkos_DIR}")
endif()
if(NOT STATEXFER_KOKKOS_REQUIRE_VERSION STREQUAL "" AND NOT Kokkos_VERSION MATCHES "^${STATEXFER_KOKKOS_REQUIRE_VERSION}")
  message(FATAL_ERROR "statexfer: STATEXFER_KOKKOS_REQUIRE_VERSION is ${STATEXFER_KOKKOS_REQUIRE_VERSION}, "
                      "found Kokkos ${Kokkos_VERSION} at ${Kokkos_DIR}")
endif()
# The library is compiled (src/transfer_<backend>.cpp, src/combine_<backend>.cpp)
# for every execution space of these backends the Kokkos has. Kokkos 3.x names
# the Threads backend Pthread.
kokkos_check(DEVICES Serial RETURN_VALUE STATEXFER_HAVE_SERIAL)
kokkos_check(DEVICES OpenMP RETURN_VALUE STATEXFER_HAVE_OPENMP)
kokkos_check(DEVICES Threads RETURN_VALUE STATEXFER_HAVE_THREADS)
set(_statexfer_threads_name Threads)
if(NOT STATEXFER_HAVE_THREADS AND Kokkos_VERSION VERSION_LESS 4.0)
  kokkos_check(DEVICES Pthread RETURN_VALUE STATEXFER_HAVE_THREADS)
  set(_statexfer_threads_name Pthread)
endif()
kokkos_check(DEVICES Cuda RETURN_VALUE STATEXFER_HAVE_CUDA)
kokkos_check(DEVICES HIP RETURN_VALUE STATEXFER_HAVE_HIP)
if(STATEXFER_HAVE_CUDA AND Kokkos_VERSION VERSION_LESS 4.0)
  kokkos_check(OPTIONS CUDA_LAMBDA)   # always on from 4.0
endif()
# The other backends have no instantiation: a Kokkos with one of them (its
# default execution space, or one a caller names) would fail only at link time.
foreach(_device HPX SYCL OpenMPTarget OpenACC)
  kokkos_check(DEVICES ${_device} RETURN_VALUE _statexfer_has_other)
  if(_statexfer_has_other)
    message(FATAL_ERROR "statexfer: the Kokkos at ${Kokkos_DIR} has the ${_device} backend, which statexfer does not "
                        "support: the library is compiled for Serial, OpenMP, Threads, Cuda and HIP only. Build "
                        "against a Kokkos without ${_device} (Kokkos_ROOT), or let statexfer build one "
                        "(STATEXFER_KOKKOS_BACKENDS).")
  endif()
endforeach()
set(STATEXFER_KOKKOS_DEVICES "")
foreach(_device Serial OpenMP Threads Cuda HIP)
  string(TOUPPER "${_device}" _upper)
  if(STATEXFER_HAVE_${_upper})
    if(_device STREQUAL "Threads")
      set(_device ${_statexfer_threads_name})  # the name the package config checks again
    endif()
    list(APPEND STATEXFER_KOKKOS_DEVICES ${_device})
  endif()
endforeach()
message(STATUS "statexfer: Kokkos ${Kokkos_VERSION} (${STATEXFER_KOKKOS_ORIGIN}, ${Kokkos_DIR}); Serial ${STATEXFER_HAVE_SERIAL}, "
               "OpenMP ${STATEXFER_HAVE_OPENMP}, Threads ${STATEXFER_HAVE_THREADS}, Cuda ${STATEXFER_HAVE_CUDA}, "
               "HIP ${STATEXFER_HAVE_HIP}")

if(STATEXFER_ENABLE_KOKKOSKERNELS)
  if(STATEXFER_KOKKOS_ORIGIN STREQUAL "bundled")
    # Header-only use: every explicit instantiation off keeps the install to seconds.
    set(_kk_args -DKokkos_ROOT=${_kokkos_prefix} -DKokkosKernels_ENABLE_TESTS=OFF
        -DKokkosKernels_ENABLE_EXAMPLES=OFF -DKokkosKernels_INST_DOUBLE=OFF -DKokkosKernels_INST_FLOAT=OFF
        -DKokkosKernels_INST_COMPLEX_DOUBLE=OFF -DKokkosKernels_INST_COMPLEX_FLOAT=OFF
        -DKokkosKernels_INST_OFFSET_INT=OFF -DKokkosKernels_INST_OFFSET_SIZE_T=OFF
        -DKokkosKernels_INST_ORDINAL_INT=OFF -DKokkosKernels_INST_ORDINAL_INT64_T=OFF
        -DKokkosKernels_INST_LAYOUTLEFT=OFF -DKokkosKernels_INST_LAYOUTRIGHT=OFF
        -DKokkosKernels_INST_EXECSPACE_SERIAL=OFF -DKokkosKernels_INST_EXECSPACE_OPENMP=OFF
        -DKokkosKernels_INST_EXECSPACE_CUDA=OFF -DKokkosKernels_INST_MEMSPACE_CUDAUVMSPACE=OFF
        -DKokkosKernels_INST_MEMSPACE_CUDASPACE=OFF -DKokkosKernels_INST_MEMSPACE_HOSTSPACE=OFF
        -DKokkosKernels_ADD_DEFAULT_ETI=OFF -DKokkosKernels_ENABLE_TPL_BLAS=OFF -DKokkosKernels_ENABLE_TPL_LAPACK=OFF
        # cuSPARSE paths of 3.4.01 name algorithms CUDA 12 removed; only the team sort is used.
        -DKokkosKernels_ENABLE_TPL_CUSPARSE=OFF -DKokkosKernels_ENABLE_TPL_CUBLAS=OFF)
    _statexfer_bundled_install(kokkoskernels "${_src}/kokkos-kernels" "${_kokkos_prefix};${_kk_args}"
                               _kk_prefix ${_kk_args})
    find_package(KokkosKernels REQUIRED CONFIG PATHS "${_kk_prefix}" NO_DEFAULT_PATH)
  else()
    find_package(KokkosKernels CONFIG QUIET)
  endif()
  if(TARGET Kokkos::kokkoskernels)
    add_library(statexfer_kokkoskernels INTERFACE)
    target_link_libraries(statexfer_kokkoskernels INTERFACE Kokkos::kokkoskernels)
    add_library(statexfer::kokkoskernels ALIAS statexfer_kokkoskernels)
    set(STATEXFER_HAVE_KOKKOSKERNELS ON)
  else()
    set(STATEXFER_HAVE_KOKKOSKERNELS OFF)
  endif()
  message(STATUS "statexfer: Kokkos Kernels ${STATEXFER_HAVE_KOKKOSKERNELS}")
endif()
