# cmake -P: install statexfer's build folder to a fresh prefix, configure and
# build the consumer project beside this script against it, run the example.
#
#   -DSTATEXFER_BUILD_DIR  the configured and built statexfer build folder
#   -DSTATEXFER_EXAMPLE    examples/round_trip.cpp
#   -DWORK_DIR             scratch folder (emptied first)
#   -DGENERATOR -DCXX_COMPILER -DBUILD_TYPE   the same toolchain as the build
#   -DCXX_LAUNCHER         the build's compiler launcher (ccache), if any
#   -DCONSUMER_FLAGS       compile and link flags the installed library needs
#                          besides its targets' (sanitizer and fuzzer builds)

foreach(_var STATEXFER_BUILD_DIR STATEXFER_EXAMPLE WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${_var} OR "${${_var}}" STREQUAL "")
    message(FATAL_ERROR "install_test.cmake: -D${_var}=... is required")
  endif()
endforeach()
if(NOT BUILD_TYPE)
  set(BUILD_TYPE Release)
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _out)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "install test: ${what} failed (${_rc}):\n${_out}")
  endif()
  message(STATUS "install test: ${what}: ok")
  set(step_output "${_out}" PARENT_SCOPE)
endfunction()

set(_prefix "${WORK_DIR}/prefix")
set(_build "${WORK_DIR}/consumer")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

run_step("install to ${_prefix}" "${CMAKE_COMMAND}" --install "${STATEXFER_BUILD_DIR}" --prefix "${_prefix}"
         --config "${BUILD_TYPE}")
foreach(_file include/statexfer/statexfer.hpp include/statexfer/version.hpp)
  if(NOT EXISTS "${_prefix}/${_file}")
    message(FATAL_ERROR "install test: ${_file} was not installed")
  endif()
endforeach()

# Only the prefix: the consumer must find statexfer (and, through its package
# config, the Kokkos it was built with) from the installed files alone.
set(_launcher)
if(CXX_LAUNCHER)
  set(_launcher "-DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER}")
endif()
run_step("configure the consumer" "${CMAKE_COMMAND}" -S "${CMAKE_CURRENT_LIST_DIR}" -B "${_build}" -G "${GENERATOR}"
         "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}" ${_launcher} "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" "-DCMAKE_PREFIX_PATH=${_prefix}"
         "-DSTATEXFER_EXAMPLE=${STATEXFER_EXAMPLE}" "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
         "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
run_step("build the consumer" "${CMAKE_COMMAND}" --build "${_build}" --config "${BUILD_TYPE}")

find_program(_example round_trip PATHS "${_build}" "${_build}/${BUILD_TYPE}" NO_DEFAULT_PATH)
if(NOT _example)
  message(FATAL_ERROR "install test: the consumer built no round_trip executable in ${_build}")
endif()
run_step("run round_trip" "${_example}")
# The example's last batch refuses one command (a wrong endpoint).
foreach(_expected "statexfer example on" "invalid_endpoint")
  string(FIND "${step_output}" "${_expected}" _at)
  if(_at LESS 0)
    message(FATAL_ERROR "install test: round_trip printed no \"${_expected}\":\n${step_output}")
  endif()
endforeach()
