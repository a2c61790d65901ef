# Warning flags for statexfer's own targets (never Kokkos or other dependencies,
# whose headers come in through imported targets and so as SYSTEM includes).
#
#   statexfer_target_warnings(<target>...)
#
# adds -Wall -Wextra -Wshadow, and -Werror when STATEXFER_ENABLE_WERROR is ON.
#
# CUDA builds compile every Kokkos-dependent source through Kokkos'
# kokkos_launch_compiler and nvcc_wrapper, which hands unknown -W flags to the
# host compiler (-Xcompiler): the host half of each .cpp gets the same warnings.
# -Werror is left out there: the host compiler then also compiles nvcc's
# generated stubs, which are not ours to keep warning-free, and a warning in them
# must not fail the build. The host presets (openmp, serial, debug, fuzz) carry it.

# CI (the environment variable CI set, as .ci/run runs) turns it on for every preset.
if(DEFINED ENV{CI} AND NOT "$ENV{CI}" STREQUAL "" AND NOT "$ENV{CI}" MATCHES "^(0|false|FALSE|no|NO|off|OFF)$")
  set(_statexfer_werror_default ON)
else()
  set(_statexfer_werror_default OFF)
endif()
option(STATEXFER_ENABLE_WERROR "Treat warnings in statexfer's own targets as errors (host compilers only; default ON under CI)"
       ${_statexfer_werror_default})

set(_statexfer_warning_flags)
if(CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  set(_statexfer_warning_flags -Wall -Wextra -Wshadow)
  if(STATEXFER_ENABLE_WERROR)
    if(STATEXFER_HAVE_CUDA)
      message(STATUS "statexfer: STATEXFER_ENABLE_WERROR is ignored on CUDA builds (nvcc's generated host code); "
                     "warnings stay warnings")
    else()
      list(APPEND _statexfer_warning_flags -Werror)
    endif()
  endif()
elseif(STATEXFER_ENABLE_WERROR)
  message(WARNING "statexfer: STATEXFER_ENABLE_WERROR has no flags for ${CMAKE_CXX_COMPILER_ID}; ignored")
endif()

function(statexfer_target_warnings)
  foreach(_target IN LISTS ARGN)
    target_compile_options(${_target} PRIVATE ${_statexfer_warning_flags})
  endforeach()
endfunction()
