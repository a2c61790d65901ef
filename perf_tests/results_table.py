#!/usr/bin/env python3
"""Markdown tables for perf_tests/RESULTS.md from one sitting's statexfer-bench JSON
and the reference module's run_seed.py bench JSON, with the issue's targets checked
for validate() + apply() (two calls, what tensor-parallel ranks use) and for
validate_and_apply() (one call) when the JSON has it.

usage: results_table.py BENCH_JSON SEED_JSON
"""
import json
import sys


STEPS = ("validate", "apply", "validate_apply", "validate_and_apply", "memcpy", "memcpy_kernel")


def medians(path):
    """name -> {step: benchmark entry}, preferring the median aggregate when repetitions ran."""
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        parts = b["run_name"].split("/") if "run_name" in b else b["name"].split("/")
        name, step = "/".join(parts[:-2]) if parts[-1].startswith("manual") else parts[0], None
        steps = [p for p in parts if p in STEPS]
        if not steps:
            continue
        step = steps[0]
        key = "/".join(p for p in parts if p not in STEPS
                       and not p.startswith("min_time") and not p.startswith("manual_time") and not p.startswith("repeats"))
        prev = out.setdefault(key, {}).get(step)
        if prev is None or b.get("run_type") == "aggregate":
            out[key][step] = b
    return out


def us(b):
    t = b["real_time"]
    return {"ns": t / 1e3, "us": t, "ms": t * 1e3}[b["time_unit"]]


def main():
    ours = medians(sys.argv[1])
    seed = {r["name"]: r for r in json.load(open(sys.argv[2]))}
    print("| shape | statexfer v+a µs | validate_and_apply µs | validate µs | apply µs | GB/s r+w | memcpy GB/s "
          "| of memcpy | reference v+a µs | validate µs | apply µs | speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    checks = []
    for name, r in seed.items():
        s = ours.get(name)
        if not s:
            continue
        # memcpy: the faster of the captured deep_copy and the plain copy kernel
        m = min(us(s["memcpy"]), us(s["memcpy_kernel"])) if "memcpy_kernel" in s else us(s["memcpy"])
        va, v, a = us(s["validate_apply"]), us(s["validate"]), us(s["apply"])
        one = us(s["validate_and_apply"]) if "validate_and_apply" in s else None
        rw = s["validate_apply"]["bytes_rw"]
        ref = r["graph_validate_apply_us"]
        gbs, mgbs = rw / va / 1e3, rw / m / 1e3
        best_time = min(va, one) if one is not None else va
        speed = ref / best_time
        print(f"| {name} | {va:.1f} | {'-' if one is None else f'{one:.1f}'} | {v:.1f} | {a:.1f} "
              f"| {rw / best_time / 1e3:.0f} | {mgbs:.0f} | {rw / best_time / 1e3 / mgbs:.0%} "
              f"| {ref:.1f} | {r['graph_validate_us']:.1f} | {r['graph_apply_us']:.1f} | {speed:.2f}x |")

        def both(what, test, detail):
            checks.append((what, test(va), None if one is None else test(one),
                           detail(va) + ("" if one is None else f"; one call {detail(one)}")))

        both(f"{name}: validate+apply <= reference", lambda t: t <= ref, lambda t: f"{t:.2f} vs {ref:.2f} µs")
        if name.startswith("hybrid-c64-1MiB") or name.startswith("trailing"):
            both(f"{name}: >= 1.3x faster than the reference", lambda t: ref / t >= 1.3, lambda t: f"{ref / t:.2f}x")
        if name in ("hybrid-c64-8MiB", "hybrid-c16-32MiB"):
            # against the best memcpy yardstick measured in the sitting (ours, the reference's torch copy)
            best = max(mgbs, r["memcpy_GBps_rw"])
            both(f"{name}: >= 95% of memcpy bandwidth", lambda t: rw / t / 1e3 >= 0.95 * best,
                 lambda t: f"{rw / t / 1e3:.0f} of {best:.0f} GB/s = {rw / t / 1e3 / best:.1%}")
        if name.startswith("tiny"):
            both("tiny: validate+apply <= 5 µs", lambda t: t <= 5.0, lambda t: f"{t:.2f} µs")
            checks.append(("tiny: validate <= reference's validate", v <= r["graph_validate_us"], None,
                           f"{v:.2f} vs {r['graph_validate_us']:.2f} µs"))
    print()
    print("| target | two calls | validate_and_apply | measured (two calls; one call) |")
    print("| --- | --- | --- | --- |")
    mark = lambda ok: "-" if ok is None else ("yes" if ok else "**no**")
    for what, ok_two, ok_one, detail in checks:
        print(f"| {what} | {mark(ok_two)} | {mark(ok_one)} | {detail} |")


if __name__ == "__main__":
    main()
