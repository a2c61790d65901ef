#!/usr/bin/env bash
# statexfer-replay on malformed input: broken copies of one conformance case
# (case.json, .npy headers, shapes, dtypes, missing and truncated files,
# expected/ answers) and bad usage. Each must end with exit status 2 and a
# message naming what is wrong, never a crash or an "internal error".
#
#   replay_bad_input.sh REPLAY CASES_ROOT WORK_DIR
set -euo pipefail

replay=$1
cases_root=$2
work=$3

# The first case with answers in expected/errors.npy.
case_dir=
while IFS= read -r -d '' f; do
  case_dir=$(dirname "$(dirname "$f")")
  break
done < <(find "$cases_root" -path '*/expected/errors.npy' -print0 | sort -z)
[[ -n $case_dir ]] || { echo "no conformance case with expected/errors.npy under $cases_root" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
failures=0
checks=0

run() {  # sets out and rc
  set +e
  out=$("$replay" "$@" -q 2>&1)
  rc=$?
  set -e
}

# expect RC MESSAGE ARGS...: exit status RC and MESSAGE in the output.
expect() {
  local want_rc=$1 message=$2
  shift 2
  checks=$((checks + 1))
  run "$@"
  local why=
  if [[ $rc -ne $want_rc ]]; then
    why="exit $rc, expected $want_rc"
  elif [[ -n $message && $out != *"$message"* ]]; then
    why="the output lacks \"$message\""
  elif [[ $out == *"internal error"* ]]; then
    why="internal error"
  fi
  if [[ -n $why ]]; then
    failures=$((failures + 1))
    echo "FAIL [$label]: $why"
    echo "  command: $replay $* -q"
    echo "$out" | sed 's/^/  | /' | head -n 20
  else
    echo "ok   [$label]: exit $rc: $(echo "$out" | head -n 1)"
  fi
}

# fresh NAME: a clean copy of the case in $work/NAME (path in $dir).
fresh() {
  label=$1
  dir="$work/$1"
  rm -rf "$dir"
  cp -R "$case_dir" "$dir"
}

# Byte offset of the first occurrence of TEXT in FILE.
offset_of() { grep -obUaF -- "$2" "$1" | head -n 1 | cut -d: -f1; }
# Overwrite FILE at OFFSET with the bytes of printf FORMAT.
poke() { printf "$3" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
# Replace the first TEXT by NEW (same length) in FILE.
replace() {
  local at
  at=$(offset_of "$1" "$2")
  [[ -n $at ]] || { echo "setup: '$2' not in $1" >&2; exit 1; }
  poke "$1" "$at" "$3"
}
cache_file() { ls "$1" | grep '^cache_.*\.npy$' | head -n 1; }

# The untouched copy is identical to its answers.
fresh good
expect 0 "" --check "$dir"

# ---------------------------------------------------------------- usage
label=no_arguments;        expect 2 "statexfer-replay:"
label=nothing_to_do;       expect 2 "nothing to do" "$dir"
label=unknown_backend;     expect 2 "unknown backend 'nope'" --check "$dir" --backend nope
label=unknown_option;      expect 2 "see --help" --check "$dir" --frobnicate
label=missing_folder;      expect 2 "no such folder" --check "$work/does-not-exist"
mkdir -p "$work/empty"
label=no_cases;            expect 2 "no case folders" --check "$work/empty"

# ---------------------------------------------------------------- case.json
fresh json_truncated;      head -c 10 "$case_dir/case.json" >"$dir/case.json"
expect 2 "case.json: bad JSON" --check "$dir"
fresh json_not_object;     echo '[1, 2]' >"$dir/case.json"
expect 2 "must hold a JSON object" --check "$dir"
fresh json_missing_key;    sed -i '/"capacity":/d' "$dir/case.json"
expect 2 "missing key 'capacity'" --check "$dir"
fresh json_string_int;     sed -i 's/"page_tokens": \([0-9]*\)/"page_tokens": "\1"/' "$dir/case.json"
expect 2 "'page_tokens' must be an integer" --check "$dir"
fresh json_negative_rows;  sed -i 's/"rows": [0-9]*/"rows": -1/' "$dir/case.json"
expect 2 "'rows' must be >= 0" --check "$dir"
fresh json_huge_int;       sed -i 's/"row_bytes": [0-9]*/"row_bytes": 18446744073709551615/' "$dir/case.json"
expect 2 "out of the int64 range" --check "$dir"
fresh json_unknown_dtype;  sed -i '0,/"dtype": "uint8"/s//"dtype": "uint7"/' "$dir/case.json"
expect 2 "unknown dtype 'uint7'" --check "$dir"
fresh json_format;         sed -i 's#"stx-case/1"#"stx-case/9"#' "$dir/case.json"
expect 2 "unsupported format 'stx-case/9'" --check "$dir"
fresh json_binding_path;   sed -z -i 's#"pages": \[\n *"[^"]*"#"pages": ["../x"#' "$dir/case.json"
expect 2 "cannot be part of a file name" --check "$dir"
fresh json_missing;        rm "$dir/case.json"
expect 2 "no case folders" --check "$dir"

# ---------------------------------------------------------------- .npy files
fresh npy_missing;         rm "$dir/backing.npy"
expect 2 "backing.npy: no such file" --check "$dir"
fresh npy_folder;          rm "$dir/tables.npy"; mkdir "$dir/tables.npy"
expect 2 "tables.npy: not a regular file" --check "$dir"
fresh npy_empty;           : >"$dir/tables.npy"
expect 2 "tables.npy: not a .npy file (bad magic)" --check "$dir"
fresh npy_bad_magic;       poke "$dir/tables.npy" 1 'X'
expect 2 "tables.npy: not a .npy file (bad magic)" --check "$dir"
fresh npy_version;         poke "$dir/state_rows.npy" 6 '\011'
expect 2 "state_rows.npy: unsupported .npy version 9.0" --check "$dir"
fresh npy_truncated_header; head -c 20 "$case_dir/state_rows.npy" >"$dir/state_rows.npy"
expect 2 "state_rows.npy: truncated header" --check "$dir"
fresh npy_header_length;   poke "$dir/operation.npy" 8 '\377\177'
expect 2 "operation.npy: truncated header" --check "$dir"
fresh npy_truncated_data;  size=$(wc -c <"$case_dir/backing.npy"); head -c $((size - 1)) "$case_dir/backing.npy" >"$dir/backing.npy"
expect 2 "backing.npy: data size does not match" --check "$dir"
fresh npy_extra_data;      printf '\001' >>"$dir/num_ops.npy"
expect 2 "num_ops.npy: data size does not match" --check "$dir"
fresh npy_dtype;           replace "$dir/state_rows.npy" "'<i8'" "'<f8'"
expect 2 "state_rows.npy: unsupported dtype '<f8'" --check "$dir"
fresh npy_big_endian;      replace "$dir/request_slots.npy" "'<i8'" "'>i8'"
expect 2 "request_slots.npy: unsupported dtype '>i8'" --check "$dir"
fresh npy_fortran;         replace "$dir/tables.npy" "False" "True "
expect 2 "tables.npy: fortran_order True is not supported" --check "$dir"
fresh npy_header_key;      replace "$dir/num_ops.npy" "'shape'" "'shapf'"
expect 2 "num_ops.npy: bad header: unexpected header key 'shapf'" --check "$dir"
fresh npy_header_syntax;   replace "$dir/num_ops.npy" "(1,)" "(1;)"
expect 2 "num_ops.npy: bad header" --check "$dir"
fresh npy_shape_data;      replace "$dir/num_ops.npy" "(1,)" "(9,)"
expect 2 "num_ops.npy: data size does not match shape (9,)" --check "$dir"
fresh npy_non_ascii;       at=$(offset_of "$dir/num_ops.npy" "}"); poke "$dir/num_ops.npy" $((at + 2)) '\377'
expect 2 "num_ops.npy: bad header: non-ASCII byte" --check "$dir"
fresh npy_wrong_dtype;     cp "$case_dir/operation.npy" "$dir/request_slots.npy"
expect 2 "request_slots.npy: expected int64 [" --check "$dir"
fresh npy_wrong_shape;     cp "$case_dir/memory_capacity.npy" "$dir/num_ops.npy"
expect 2 "num_ops.npy: expected int32 [1], got int64 [2]" --check "$dir"
fresh npy_wrong_rank;      cp "$case_dir/num_ops.npy" "$dir/tables.npy"
expect 2 "tables.npy: expected int32 [" --check "$dir"
fresh npy_cache_missing;   rm "$dir/$(cache_file "$case_dir")"
expect 2 "$(cache_file "$case_dir"): no such file" --check "$dir"
fresh npy_cache_shape;     cp "$case_dir/backing.npy" "$dir/$(cache_file "$case_dir")"
expect 2 "$(cache_file "$case_dir"): expected uint8 [P, " --check "$dir"

# ---------------------------------------------------------------- expected/
fresh expected_missing_errors; rm "$dir/expected/errors.npy"
expect 2 "expected/errors.npy: no such file" --check "$dir"
fresh expected_bad_backing; cp "$case_dir/expected/errors.npy" "$dir/expected/backing.npy"
expect 2 "expected/backing.npy: expected uint8 [" --check "$dir"
fresh expected_error_json; rm "$dir"/expected/*; echo '{"kind": 1}' >"$dir/expected/error.json"
expect 2 "expected/error.json: missing key 'message'" --check "$dir"
fresh expected_none;       rm -r "$dir/expected"
expect 2 "no expected/ answers to check against" --check "$dir"
# Without --check the same folder is fine.
label=expected_none_out;   expect 0 "" "$dir" --out "$work/out"

# ---------------------------------------------------------------- a folder of cases, one broken
label=folder_one_bad
mkdir -p "$work/folder"
cp -R "$case_dir" "$work/folder/a_good"
cp -R "$case_dir" "$work/folder/b_bad"
: >"$work/folder/b_bad/tables.npy"
expect 2 "b_bad/tables.npy: not a .npy file" --check "$work/folder"

echo "replay_bad_input: $checks checks, $failures failed (case $case_dir)"
[[ $failures -eq 0 ]]
