# Shared by tools/gpu/device-run and tools/gpu/bench-vs-reference (sourced, not run):
# one sitting's steps, ours and the reference on the same shapes, then the table and
# plots. The caller defines run (echo the command, run it, set status=1 on failure)
# and status. File names in OUT: bench.json (the facts set), bench-SET.json,
# seed-bench-SET.json, tables.md, plot-*.png.

# sitting_bench BIN SET OUT [ARGS...]: statexfer-bench on a built-in set ("" or facts:
# the default set, into bench.json) or on a file of shapes (SET = shapes:FILE).
sitting_bench() {
  local bin=$1 set=$2 out=$3
  shift 3
  case $set in
    "" | facts) run "$bin" --benchmark_out="$out/bench.json" --benchmark_out_format=json "$@" ;;
    shapes:*) run "$bin" --shapes "${set#shapes:}" --benchmark_out="$out/bench-shapes.json" --benchmark_out_format=json "$@" ;;
    *) run "$bin" --set "$set" --benchmark_out="$out/bench-$set.json" --benchmark_out_format=json "$@" ;;
  esac
}

# sitting_reference REFERENCE BIN SET OUT: the reference module on the shapes the
# bench binary lists for SET (or on a file of shapes, SET = shapes:FILE).
sitting_reference() {
  local ref=$1 bin=$2 set=$3 out=$4
  case $set in
    shapes:*) run python3 perf_tests/reference_shapes.py --reference "$ref" --shapes "${set#shapes:}" \
                --json "$out/seed-bench-shapes.json" ;;
    *) run python3 perf_tests/reference_shapes.py --reference "$ref" --bench "$bin" --set "$set" \
         --json "$out/seed-bench-$set.json" ;;
  esac
}

# sitting_report OUT: one table for the sitting (tables.md: every bench and reference
# JSON in OUT) and the GB/s plots (with matplotlib).
sitting_report() {
  local out=$1 benches seeds py b png
  benches=$(ls "$out"/bench.json "$out"/bench-models.json "$out"/bench-shapes.json 2>/dev/null | paste -sd, -)
  seeds=$(ls "$out"/seed-bench*.json 2>/dev/null | paste -sd, -)
  [[ -n $benches ]] || { echo "::: report: no bench JSON in $out"; status=2; return; }
  echo "::: results_table.py $benches ${seeds:--} > $out/tables.md"
  python3 perf_tests/results_table.py "$benches" "${seeds:--}" > "$out/tables.md" || { echo "::: FAILED: results_table.py"; status=1; }
  cat "$out/tables.md"
  py=python3; python3 -c 'import matplotlib' 2>/dev/null || py=/usr/bin/python3
  for b in ${benches//,/ }; do
    png="$out/plot-$(basename "$b" .json).png"
    if $py -c 'import matplotlib' 2>/dev/null; then run $py perf_tests/plot_bench.py "$png" "$b" "${seeds:--}"
    else echo "::: no matplotlib here: perf_tests/plot_bench.py $png $b ${seeds:--} on a machine with it"; fi
  done
}
