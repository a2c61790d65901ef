# Speculative decoding's reports (--spec-tokens), read from the JSON reports.
#   cmake -DSIM=statexfer-sim -DOUT=dir [-DMODE=single] -P check_spec.cmake
#     without --spec-tokens the run is the simulator's as it was before
#     speculative decoding (its schedule and bytes pinned below); with it, both
#     moves verified: commits, accepted drafts, tokens and commit bytes add up;
#     each single-rank fault kind refused with its code; accepted-disagree
#     refused as an argument on one rank.
#   cmake -DJSON=report.json -DMODE=tp2 -P check_spec.cmake
#     the two-rank run's faults (sim_tp2_spec): each refused with its code.

include(${CMAKE_CURRENT_LIST_DIR}/check_common.cmake)
function(run name)
  execute_process(COMMAND ${SIM} ${ARGN} --no-progress --quiet --json ${OUT}/sim_spec_${name}.json RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "statexfer-sim ${ARGN} exited with ${_rc}")
  endif()
  file(READ ${OUT}/sim_spec_${name}.json _j)
  set(json_${name} "${_j}" PARENT_SCOPE)
endfunction()
# Fault `index` of the report `json`: its kind, code and refusal.
function(expect_fault json index kind code)
  field(_kind "${json}" faults requested ${index} kind)
  field(_code "${json}" faults requested ${index} code)
  field(_refused "${json}" faults requested ${index} refused)
  field(_at "${json}" faults requested ${index} injected_step)
  field(_what "${json}" faults requested ${index} command_kind)
  expect("fault ${index} (${_kind}) hit a ${_what} at step ${_at} and got code ${_code}, refused on every rank"
         _kind STREQUAL kind AND _code EQUAL code AND _refused)
endfunction()

if(MODE STREQUAL "tp2")
  file(READ ${JSON} _j)
  field(ok "${_j}" verify ok)
  expect("the two ranks' run verified" ok)
  expect_fault("${_j}" 0 stale-position 3)
  expect_fault("${_j}" 1 accepted-range 2)
  expect_fault("${_j}" 2 accepted-disagree 3)
  expect_fault("${_j}" 3 accepted-disagree 3)
  expect_fault("${_j}" 4 recycled-key 3)
  field(injected "${_j}" faults injected)
  field(refused "${_j}" faults refused_on_every_rank)
  expect("every fault refused on both ranks" injected EQUAL 5 AND refused EQUAL 5)
  field(endpoint "${_j}" speculative commits by_code invalid_endpoint)
  field(slots "${_j}" speculative commits by_code invalid_slots)
  field(fallbacks "${_j}" speculative commits fallbacks_to_n_plus_1)
  expect("commits refused: 3 with code 3, 1 with code 2, each fell back to n + 1"
         endpoint EQUAL 3 AND slots EQUAL 1 AND fallbacks EQUAL 4)
  return()
endif()

set(_w --requests 400 --seed 7 --snapshot-rows 48)
# 1. No --spec-tokens: the schedule, rows and bytes of the simulator before
#    speculative decoding (statexfer-sim at 69b1312, this workload).
run(off ${_w})
string(JSON _none ERROR_VARIABLE _absent GET "${json_off}" speculative)
expect("no speculative section without --spec-tokens" _absent)
string(JSON _none ERROR_VARIABLE _absent GET "${json_off}" commands by_kind commit)
expect("no commit kind without --spec-tokens" _absent)
string(JSON _none ERROR_VARIABLE _absent GET "${json_off}" config prefix_keys)
expect("no prefix keys without --spec-tokens" _absent)
field(rows "${json_off}" config pool_rows)
field(row_bytes "${json_off}" config pool_row_bytes_per_rank)
field(steps "${json_off}" steps)
field(snapshots "${json_off}" commands by_kind snapshot applied)
field(restores "${json_off}" commands by_kind restore applied)
field(resets "${json_off}" commands by_kind reset applied)
field(moved "${json_off}" bytes_moved all_ranks)
field(decoded "${json_off}" tokens decoded)
# (The bytes: each byte a command writes once. Until 2026-12-05 a snapshot's
# partial pages counted twice, as its row's page regions and as pages:
# 40,707,584 B.)
expect("the pool and the schedule are as before: 113 rows of 38,992 B, 221 steps, 528 snapshots, 254 restores, 146 resets, 37,629,440 B moved"
       rows EQUAL 113 AND row_bytes EQUAL 38992 AND steps EQUAL 221 AND snapshots EQUAL 528 AND restores EQUAL 254
       AND resets EQUAL 146 AND moved EQUAL 37629440 AND decoded EQUAL 10950)
# A snapshot writes its row once, its pages in place of the row's page regions:
# 528 snapshots of the row less its 64 B scratch, whatever their pages.
field(snapshot_bytes "${json_off}" snapshots bytes_all_ranks)
math(EXPR _rows_written "528 * (38992 - 64)")
expect("528 snapshots wrote 528 rows of 38,928 B" snapshot_bytes EQUAL ${_rows_written})

# 2. Both moves, verified: the same acceptance, so the same commits; the remap moves no byte.
run(remap ${_w} --spec-tokens 4 --verify)
run(copy ${_w} --spec-tokens 4 --verify --commit-move copy)
foreach(m remap copy)
  set(_j "${json_${m}}")
  field(ok "${_j}" verify ok)
  field(rows "${_j}" config pool_rows)
  field(issued "${_j}" speculative commits issued)
  field(applied "${_j}" speculative commits applied)
  field(accepted_${m} "${_j}" speculative accepted_drafts total)
  field(verifies "${_j}" speculative verifies)
  field(drafted "${_j}" speculative tokens drafted)
  field(verified "${_j}" speculative tokens verified)
  field(committed "${_j}" speculative tokens committed)
  field(decoded_spec "${_j}" tokens decoded)
  field(bytes_${m} "${_j}" speculative commit_bytes all_ranks)
  field(zero_${m} "${_j}" speculative accepted_drafts by_count 0)
  field(steps_${m} "${_j}" steps)
  field(total "${_j}" commands total)
  field(none "${_j}" errors_by_code none)
  math(EXPR _sum "${verifies} + ${accepted_${m}}")
  math(EXPR _vsum "${verifies} + ${drafted}")
  message(STATUS "${m}: ${applied} commits, ${accepted_${m}} accepted drafts of ${drafted}, ${committed} tokens committed, "
                 "${steps_${m}} steps (${steps} without speculation), commit bytes ${bytes_${m}}")
  expect("${m}: verified, 1 + 64 x 5 + 48 rows, every command applied" ok AND rows EQUAL 369 AND none EQUAL total)
  expect("${m}: a commit for every verify, every one applied" issued EQUAL verifies AND applied EQUAL issued)
  expect("${m}: committed = verifies + accepted drafts = the tokens decoded without speculation"
         committed EQUAL _sum AND committed EQUAL decoded AND decoded_spec EQUAL decoded)
  expect("${m}: verified = verifies + drafts" verified EQUAL _vsum)
  expect("${m}: drafts were accepted and the run took fewer steps" accepted_${m} GREATER 0 AND steps_${m} LESS steps)
endforeach()
field(pool_row "${json_copy}" config pool_row_bytes_per_rank)
field(scratch "${json_copy}" config scratch_bytes)
math(EXPR _moving "${applied} - ${zero_copy}")
math(EXPR _copied "${_moving} * (${pool_row} - ${scratch})")
expect("both moves accept the same drafts in the same steps" accepted_remap EQUAL accepted_copy AND steps_remap EQUAL steps_copy)
expect("a remap moves no byte" bytes_remap EQUAL 0)
expect("a copying commit that accepted a draft moves a row but the scratch: ${_moving} x (${pool_row} - ${scratch})"
       bytes_copy EQUAL _copied)

# 3. Each fault kind on one rank, refused with its code; the run goes on verified.
run(faults ${_w} --spec-tokens 3 --verify --inject-fault 0:10:stale-position --inject-fault 0:20:accepted-range
    --inject-fault 0:30:recycled-key)
expect_fault("${json_faults}" 0 stale-position 3)
expect_fault("${json_faults}" 1 accepted-range 2)
expect_fault("${json_faults}" 2 recycled-key 3)
field(ok "${json_faults}" verify ok)
field(fallbacks "${json_faults}" speculative commits fallbacks_to_n_plus_1)
field(recomputed "${json_faults}" commands restore_fallbacks)
field(completed "${json_faults}" requests completed)
expect("verified; both faulted commits fell back to n + 1, the restore to a recomputation; every request done"
       ok AND fallbacks EQUAL 2 AND recomputed GREATER_EQUAL 1 AND completed EQUAL 400)
# A restore from the host tier whose host row holds another prefix's key.
run(host_key --requests 400 --seed 7 --snapshot-rows 4 --host-snapshot-rows 64 --spec-tokens 3 --verify
    --inject-fault 0:20:recycled-key)
expect_fault("${json_host_key}" 0 recycled-key 3)
field(_hit "${json_host_key}" faults requested 0 command_kind)
set(_host "restore from host")
expect("the recycled row was a host row" _hit STREQUAL _host)

# 4. Prefix keys without speculative decoding (--prefix-keys): a recycled row refused.
run(keys ${_w} --prefix-keys --verify --inject-fault 0:30:recycled-key)
expect_fault("${json_keys}" 0 recycled-key 3)
string(JSON _none ERROR_VARIABLE _absent GET "${json_keys}" speculative)
field(keys "${json_keys}" config prefix_keys)
field(rows "${json_keys}" config pool_rows)
expect("--prefix-keys alone: keys, no position rows, no speculative section" keys AND rows EQUAL 113 AND _absent)

# 5. One rank cannot disagree with itself: an argument error (exit status 2).
execute_process(COMMAND ${SIM} ${_w} --spec-tokens 2 --inject-fault 0:3:accepted-disagree --no-progress
                RESULT_VARIABLE _rc ERROR_VARIABLE _err)
string(FIND "${_err}" "needs --tp 2 or more" _at)
expect("accepted-disagree on one rank is refused, saying why" _rc EQUAL 2 AND _at GREATER -1)
