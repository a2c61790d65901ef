# sim_tier_stream: the host tier's moves in batches of their own on a stream of
# their own (--tier-moves stream, the default with a host tier) and the report's
# limit, read from the JSON reports:
#   1. a verified run whose offload-race snapshot (into a row its offload still
#      reads) is refused with row_in_use and writes nothing: on hosts the step's
#      batch runs between the offloads' validate and apply, so the refusal is
#      certain; every other command applied;
#   2. its limit: the default probe's size (a full batch's rows on hosts),
#      rates probed, the limit and the efficiency positive (the
#      critical path is at least the limit only where the probe ran alone: a
#      host sharing its cores with other tests can probe below the rate its
#      steps then get, so that is reported, not asserted; test_sim_tier.cpp
#      checks the figures' arithmetic); its tier stream: launches, moves, time
#      and limit;
#   3. the same workload with the moves in the step's batch (--tier-moves step):
#      no tier stream, every request done, every command applied;
#   4. --probe-mib 0: no probe, no limit;
#   5. offload-race without the tier stream: refused as an argument.
#   cmake -DSIM=statexfer-sim -DOUT=dir -P check_tier_stream.cmake

include(${CMAKE_CURRENT_LIST_DIR}/check_common.cmake)
function(run name)
  execute_process(COMMAND ${SIM} ${ARGN} --no-progress --quiet --json ${OUT}/sim_tier_${name}.json RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "statexfer-sim ${ARGN} exited with ${_rc}")
  endif()
  file(READ ${OUT}/sim_tier_${name}.json _j)
  set(json_${name} "${_j}" PARENT_SCOPE)
endfunction()

set(_w --requests 400 --seed 7 --snapshot-rows 8 --host-snapshot-rows 6 --verify-full-every 25)

# 1. The race, refused.
run(race ${_w} --verify --inject-fault 0:20:offload-race)
set(_j "${json_race}")
field(ok "${_j}" verify ok)
field(moves "${_j}" host_tier moves)
field(kind "${_j}" faults requested 0 kind)
field(code "${_j}" faults requested 0 code)
field(hit "${_j}" faults requested 0 command_kind)
field(at "${_j}" faults requested 0 injected_step)
field(refused "${_j}" faults requested 0 refused)
field(settled "${_j}" faults settled)
field(in_use "${_j}" errors_by_code row_in_use)
field(none "${_j}" errors_by_code none)
field(total "${_j}" commands total)
field(completed "${_j}" requests completed)
math(EXPR _others "${total} - 1")
message(STATUS "offload-race: a ${hit} at step ${at} got code ${code}; ${in_use} row_in_use, ${none} of ${total} applied")
expect("the moves ran on the tier stream" moves STREQUAL "stream")
expect("verified: the refused snapshot wrote nothing" ok)
expect("the race hit a snapshot and was refused with row_in_use (7)"
       kind STREQUAL "offload-race" AND hit STREQUAL "snapshot" AND code EQUAL 7 AND refused AND settled EQUAL 1)
expect("one command refused with code 7, every other applied, every request done"
       in_use EQUAL 1 AND none EQUAL _others AND completed EQUAL 400)

# 2. The limit and the tier stream's figures of that run.
# The default probe: 256 MiB on GPUs; on hosts a full batch's rows, 1 to 64 MiB (sim/limit.hpp).
field(probe_bytes "${_j}" limit probe bytes)
field(probe_reps "${_j}" limit probe repetitions)
field(backend "${_j}" backend)
field(capacity "${_j}" config capacity)
field(row_bytes "${_j}" config pool_row_bytes_per_rank)
math(EXPR _want "${capacity} * ${row_bytes}")
if(_want LESS 1048576)
  set(_want 1048576)
elseif(_want GREATER 67108864)
  set(_want 67108864)
endif()
if(backend MATCHES "^(Cuda|HIP)")
  set(_want 268435456)
endif()
expect("the default probe (${probe_bytes} B, ${probe_reps} repetitions) is ${_want} B on ${backend}"
       probe_bytes EQUAL _want AND probe_reps GREATER_EQUAL 4)
foreach(_f copy_gb_per_s fill_gb_per_s host_to_device_gb_per_s device_to_host_gb_per_s)
  field(rate "${_j}" limit probe ${_f})
  expect("the probe measured ${_f} (${rate})" rate GREATER 0)
endforeach()
field(steps "${_j}" limit steps)
field(transfer_steps "${_j}" transfer_steps)
field(limit "${_j}" limit limit_us_per_step)
field(critical "${_j}" limit critical_path_us_per_step mean)
field(p50 "${_j}" limit critical_path_us_per_step p50)
field(p99 "${_j}" limit critical_path_us_per_step p99)
field(efficiency "${_j}" limit efficiency)
message(STATUS "limit: critical path ${critical} us per step (p50 ${p50}, p99 ${p99}), limit ${limit} us: "
               "efficiency ${efficiency}")
expect("the limit covers the steps with commands" steps EQUAL transfer_steps AND steps GREATER 0)
expect("the limit and the efficiency are positive" limit GREATER 0 AND efficiency GREATER 0)
if(limit GREATER critical)
  message(STATUS "note: the limit exceeds the critical path (efficiency ${efficiency}): the probe ran slower than "
                 "the steps, as on a loaded host")
endif()
field(launches "${_j}" tier_stream launches)
field(tier_mean "${_j}" tier_stream time_us_per_launch mean)
field(tier_limit "${_j}" tier_stream limit_us_per_launch)
field(tier_eff "${_j}" tier_stream efficiency)
field(to_host "${_j}" tier_stream bytes_this_rank device_to_host)
field(host_bytes "${_j}" host_tier this_rank_bytes_device_to_host)
field(offloads "${_j}" host_tier offloads)
field(step_to_host "${_j}" limit bytes_this_rank device_to_host)
message(STATUS "tier stream: ${launches} launches, ${tier_mean} us each, limit ${tier_limit} us (${tier_eff})")
expect("offloads ran on the tier stream, their bytes counted there and not on the critical path"
       launches GREATER 0 AND offloads GREATER 0 AND to_host EQUAL host_bytes AND step_to_host EQUAL 0)
expect("the tier stream's limit and efficiency are positive" tier_limit GREATER 0 AND tier_eff GREATER 0)
if(tier_limit GREATER tier_mean)
  message(STATUS "note: the tier stream's limit exceeds its time (efficiency ${tier_eff}): a loaded host's probe")
endif()

# 3. The moves in the step's batch: no tier stream, the moves on the critical path.
run(step ${_w} --tier-moves step)
string(JSON _none ERROR_VARIABLE _absent GET "${json_step}" tier_stream)
expect("no tier_stream section with --tier-moves step" _absent)
field(moves "${json_step}" host_tier moves)
field(none "${json_step}" errors_by_code none)
field(total "${json_step}" commands total)
field(completed "${json_step}" requests completed)
field(step_to_host "${json_step}" limit bytes_this_rank device_to_host)
expect("moves in the step's batch, every command applied, every request done, the offloads on the critical path"
       moves STREQUAL "step" AND none EQUAL total AND completed EQUAL 400 AND step_to_host GREATER 0)

# 4. No probe, no limit.
run(noprobe --requests 100 --probe-mib 0)
string(JSON _type ERROR_VARIABLE _err TYPE "${json_noprobe}" limit efficiency)
field(critical "${json_noprobe}" limit critical_path_us_per_step mean)
expect("--probe-mib 0: the efficiency is null, the critical path measured" _type STREQUAL "NULL" AND critical GREATER 0)

# 5. A race needs the tier stream.
execute_process(COMMAND ${SIM} ${_w} --tier-moves step --inject-fault 0:20:offload-race --no-progress
                RESULT_VARIABLE _rc ERROR_VARIABLE _err)
string(FIND "${_err}" "offload-race needs a host tier" _at)
expect("offload-race without the tier stream is refused, saying why" _rc EQUAL 2 AND _at GREATER -1)
