# Kokkos and Kokkos Kernels.
#
# With Kokkos_ROOT or Kokkos_DIR set, the user's Kokkos (3.4 or newer) is used.
# Otherwise Kokkos 3.4.01 and Kokkos Kernels 3.4.01 are taken from Debian's
# `trilinos` source package (cmake/fetch-kokkos.sh), patched with cmake/patches,
# built and installed once under STATEXFER_DEPS_DIR, one install per backend set,
# and reused by every build folder that asks for the same configuration.

set(STATEXFER_DEPS_DIR "${PROJECT_SOURCE_DIR}/.deps" CACHE PATH
    "Where the bundled Kokkos sources and installs are kept")

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

if(DEFINED Kokkos_ROOT OR DEFINED Kokkos_DIR OR DEFINED ENV{Kokkos_ROOT})
  set(STATEXFER_BUNDLED_KOKKOS OFF)
  find_package(Kokkos REQUIRED CONFIG)
else()
  set(STATEXFER_BUNDLED_KOKKOS ON)
  file(MAKE_DIRECTORY "${STATEXFER_DEPS_DIR}")
  # One configure at a time may fetch or build into the shared folder.
  file(LOCK "${STATEXFER_DEPS_DIR}/.lock" GUARD FILE TIMEOUT 3600)
  set(_src "${STATEXFER_DEPS_DIR}/src")
  file(GLOB _patches "${PROJECT_SOURCE_DIR}/cmake/patches/*.patch")
  _statexfer_run("fetching Kokkos 3.4.01 (cmake/fetch-kokkos.sh)"
    bash "${PROJECT_SOURCE_DIR}/cmake/fetch-kokkos.sh" "${_src}" "${PROJECT_SOURCE_DIR}/cmake/patches")
  file(READ "${_src}/.stamp" _stamp)

  set(_kokkos_args -DKokkos_CXX_STANDARD=17 -DKokkos_ENABLE_TESTS=OFF -DKokkos_ENABLE_EXAMPLES=OFF)
  foreach(_backend IN LISTS STATEXFER_KOKKOS_BACKENDS)
    string(TOUPPER "${_backend}" _backend)
    if(NOT _backend MATCHES "^(SERIAL|OPENMP|CUDA)$")
      message(FATAL_ERROR "statexfer: STATEXFER_KOKKOS_BACKENDS: unknown backend '${_backend}' (SERIAL, OPENMP, CUDA)")
    endif()
    list(APPEND _kokkos_args -DKokkos_ENABLE_${_backend}=ON)
    if(_backend STREQUAL "CUDA")
      if(NOT STATEXFER_CUDA_ARCH MATCHES "^(HOPPER90|AMPERE80)$")
        message(FATAL_ERROR "statexfer: STATEXFER_CUDA_ARCH must be HOPPER90 or AMPERE80, got '${STATEXFER_CUDA_ARCH}'")
      endif()
      list(APPEND _kokkos_args -DKokkos_ENABLE_CUDA_LAMBDA=ON -DKokkos_ARCH_${STATEXFER_CUDA_ARCH}=ON)
    endif()
  endforeach()
  separate_arguments(_extra UNIX_COMMAND "${STATEXFER_KOKKOS_OPTIONS}")
  list(APPEND _kokkos_args ${_extra})
  _statexfer_bundled_install(kokkos "${_src}/kokkos" "${_stamp};${CMAKE_CXX_COMPILER};${_kokkos_args}"
                             _kokkos_prefix ${_kokkos_args})
  find_package(Kokkos REQUIRED CONFIG PATHS "${_kokkos_prefix}" NO_DEFAULT_PATH)
endif()

# The API statexfer is written to is the one 3.4 and 4.x/5.x share. Kokkos
# 3.4's version file rejects ranges, so the floor is checked here.
if(Kokkos_VERSION VERSION_LESS 3.4)
  message(FATAL_ERROR "statexfer needs Kokkos 3.4 or newer, found ${Kokkos_VERSION} at ${Kokkos_DIR}")
endif()
kokkos_check(DEVICES Serial RETURN_VALUE STATEXFER_HAVE_SERIAL)
kokkos_check(DEVICES OpenMP RETURN_VALUE STATEXFER_HAVE_OPENMP)
kokkos_check(DEVICES Cuda RETURN_VALUE STATEXFER_HAVE_CUDA)
if(STATEXFER_HAVE_CUDA AND Kokkos_VERSION VERSION_LESS 4.0)
  kokkos_check(OPTIONS CUDA_LAMBDA)   # always on from 4.0
endif()
message(STATUS "statexfer: Kokkos ${Kokkos_VERSION} (${Kokkos_DIR}); Serial ${STATEXFER_HAVE_SERIAL}, "
               "OpenMP ${STATEXFER_HAVE_OPENMP}, Cuda ${STATEXFER_HAVE_CUDA}")

if(STATEXFER_ENABLE_KOKKOSKERNELS)
  if(STATEXFER_BUNDLED_KOKKOS)
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
