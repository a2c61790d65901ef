# sim_host_tier_hits: the host tier must serve hits when the device snapshot
# budget is too small for the workload. Runs the simulator twice at the same
# device budget, without and with a host tier, and checks the JSON reports:
# host hits, offloads, onloads and restores from host occur, the hits add up,
# bytes crossed the tiers both ways, and the tier raised the hit rate.
#   cmake -DSIM=statexfer-sim -DOUT=dir -P check_host_tier.cmake

set(_args --requests 1500 --seed 21 --snapshot-rows 16 --no-progress --quiet)
foreach(_n 0 64)
  execute_process(COMMAND ${SIM} ${_args} --host-snapshot-rows ${_n} --json ${OUT}/sim_host_tier_${_n}.json
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "statexfer-sim --host-snapshot-rows ${_n} exited with ${_rc}")
  endif()
  file(READ ${OUT}/sim_host_tier_${_n}.json _json_${_n})
endforeach()

include(${CMAKE_CURRENT_LIST_DIR}/check_common.cmake)

field(hits0 "${_json_0}" prefix_cache hits)
string(JSON _tier0 ERROR_VARIABLE _none GET "${_json_0}" host_tier)
expect("no host_tier section without a host tier" _none)
field(hits "${_json_64}" prefix_cache hits)
field(device_hits "${_json_64}" host_tier device_hits)
field(host_hits "${_json_64}" host_tier host_hits)
field(offloads "${_json_64}" host_tier offloads)
field(onloads "${_json_64}" host_tier onloads)
field(host_restores "${_json_64}" host_tier host_restores)
field(to_host "${_json_64}" host_tier this_rank_bytes_device_to_host)
field(from_host "${_json_64}" host_tier this_rank_bytes_host_to_device)
field(errors "${_json_64}" errors_by_code none)
field(total "${_json_64}" commands total)
math(EXPR _sum "${device_hits} + ${host_hits}")
message(STATUS "hits: ${hits0} without the tier; ${hits} with it (${device_hits} device + ${host_hits} host), "
               "${offloads} offloads, ${onloads} onloads, ${host_restores} restores from host")
expect("host hits occur" host_hits GREATER 0)
expect("offloads occur" offloads GREATER 0)
expect("onloads occur" onloads GREATER 0)
expect("every host hit is a restore from the host" host_restores EQUAL host_hits)
expect("device + host hits are the hits" _sum EQUAL hits)
expect("bytes went to the host" to_host GREATER 0)
expect("bytes came from the host" from_host GREATER 0)
expect("every command applied" errors EQUAL total)
expect("the host tier raises the hit count" hits GREATER hits0)
