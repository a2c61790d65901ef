# sim_mooncake_policies: the hand-checked Mooncake-format file (mooncake-small.jsonl,
# sim/README.md works the figures out) under every snapshot policy, checked in
# the JSON reports: hits, restored tokens, snapshots taken, the attention-only
# bound unbounded and at 4 rows, queueing when every request arrives at once;
# then a file with a bad third line must be refused, naming the line, before
# anything runs.
#   cmake -DSIM=statexfer-sim -DTRACE=mooncake-small.jsonl -DOUT=dir -P check_mooncake.cmake

set(_common --trace ${TRACE} --trace-block-tokens 16 --page-tokens 4 --verify --no-progress --quiet)

include(${CMAKE_CURRENT_LIST_DIR}/check_common.cmake)
# run(NAME ARGS...): the report of one run in _json.
macro(run name)
  execute_process(COMMAND ${SIM} ${_common} ${ARGN} --json ${OUT}/sim_mooncake_${name}.json RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "statexfer-sim ${ARGN} exited with ${_rc}")
  endif()
  file(READ ${OUT}/sim_mooncake_${name}.json _json)
endmacro()

# policy: hits, restored tokens, snapshots taken (README's table).
foreach(_case "all;5;160;7" "last;4;144;6" "every:2;4;128;3" "ends;1;40;13")
  list(GET _case 0 _policy)
  list(GET _case 1 _hits)
  list(GET _case 2 _restored)
  list(GET _case 3 _taken)
  string(REPLACE ":" "-" _name ${_policy})
  run(${_name} --snapshot-policy ${_policy} --snapshot-rows 16 --capacity 4)
  field(hits "${_json}" prefix_cache hits)
  field(restored "${_json}" reuse restored_tokens)
  field(input "${_json}" reuse input_tokens)
  field(taken "${_json}" snapshots taken)
  field(bound "${_json}" reuse attention_bound unbounded_tokens)
  field(verified "${_json}" verify ok)
  expect("${_policy}: ${_hits} hits" hits EQUAL ${_hits})
  expect("${_policy}: ${_restored} restored tokens" restored EQUAL ${_restored})
  expect("${_policy}: ${_taken} snapshots taken" taken EQUAL ${_taken})
  expect("${_policy}: 307 input tokens" input EQUAL 307)
  expect("${_policy}: the bound is 184 tokens" bound EQUAL 184)
  expect("${_policy}: within the bound" NOT restored GREATER bound)
  expect("${_policy}: verified" verified STREQUAL "ON")
endforeach()

run(budget --snapshot-policy all --snapshot-rows 4 --capacity 4)
field(budget "${_json}" reuse attention_bound budget_tokens)
field(blocks "${_json}" reuse attention_bound budget_blocks)
expect("the bound at 4 blocks is 144 tokens" budget EQUAL 144)
expect("the budget is the snapshot rows" blocks EQUAL 4)

# Every request at once into one slot: the same schedule, six waits.
run(queued --snapshot-policy all --snapshot-rows 16 --time-scale 0 --capacity 1)
field(restored "${_json}" reuse restored_tokens)
field(waited "${_json}" queueing waited)
field(max_wait "${_json}" queueing delay_ms max)
expect("one slot at a time restores the same 160 tokens" restored EQUAL 160)
expect("six requests waited" waited EQUAL 6)
expect("a wait is positive" max_wait GREATER 0)

# A bad line is refused with its line named, before any step runs.
file(WRITE ${OUT}/sim_mooncake_bad.jsonl
     "{\"timestamp\": 0, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, 2]}\n# a comment\n"
     "{\"timestamp\": 5, \"input_length\": 20, \"output_length\": 1, \"hash_ids\": [1, 2, 3]}\n")
execute_process(COMMAND ${SIM} --trace ${OUT}/sim_mooncake_bad.jsonl --trace-block-tokens 16 --no-progress
                RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
expect("a bad trace exits with 2" _rc EQUAL 2)
string(FIND "${_err}" "sim_mooncake_bad.jsonl:3: 3 hash ids" _at)
expect("the error names line 3 (${_err})" NOT _at EQUAL -1)
string(FIND "${_out}" "requests" _ran)
expect("nothing ran" _ran EQUAL -1)
