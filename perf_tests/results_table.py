#!/usr/bin/env python3
"""Markdown tables for perf_tests/RESULTS.md from one sitting's statexfer-bench JSON
and the reference module's run_seed.py bench JSON, with the issue's targets checked.

usage: results_table.py BENCH_JSON SEED_JSON
"""
import json
import sys


def medians(path):
    """name -> {step: benchmark entry}, preferring the median aggregate when repetitions ran."""
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        parts = b["run_name"].split("/") if "run_name" in b else b["name"].split("/")
        name, step = "/".join(parts[:-2]) if parts[-1].startswith("manual") else parts[0], None
        steps = [p for p in parts if p in ("validate", "apply", "validate_apply", "memcpy", "memcpy_kernel")]
        if not steps:
            continue
        step = steps[0]
        key = "/".join(p for p in parts if p not in ("validate", "apply", "validate_apply", "memcpy", "memcpy_kernel")
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
    print("| shape | statexfer v+a µs | validate µs | apply µs | GB/s r+w | memcpy GB/s | of memcpy "
          "| reference v+a µs | validate µs | apply µs | speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    checks = []
    for name, r in seed.items():
        s = ours.get(name)
        if not s:
            continue
        # memcpy: the faster of the captured deep_copy and the plain copy kernel
        m = min(us(s["memcpy"]), us(s["memcpy_kernel"])) if "memcpy_kernel" in s else us(s["memcpy"])
        va, v, a = us(s["validate_apply"]), us(s["validate"]), us(s["apply"])
        rw = s["validate_apply"]["bytes_rw"]
        gbs, mgbs = rw / va / 1e3, rw / m / 1e3
        speed = r["graph_validate_apply_us"] / va
        print(f"| {name} | {va:.1f} | {v:.1f} | {a:.1f} | {gbs:.0f} | {mgbs:.0f} | {gbs / mgbs:.0%} "
              f"| {r['graph_validate_apply_us']:.1f} | {r['graph_validate_us']:.1f} | {r['graph_apply_us']:.1f} "
              f"| {speed:.2f}x |")
        checks.append((f"{name}: validate+apply <= reference", va <= r["graph_validate_apply_us"],
                       f"{va:.1f} vs {r['graph_validate_apply_us']:.1f} µs"))
        if name.startswith("hybrid-c64-1MiB") or name.startswith("trailing"):
            checks.append((f"{name}: >= 1.3x faster than the reference", speed >= 1.3, f"{speed:.2f}x"))
        if name in ("hybrid-c64-8MiB", "hybrid-c16-32MiB"):
            # against the best memcpy yardstick measured in the sitting (ours, the reference's torch copy)
            best = max(mgbs, r["memcpy_GBps_rw"])
            checks.append((f"{name}: >= 95% of memcpy bandwidth", gbs >= 0.95 * best,
                           f"{gbs:.0f} of {best:.0f} GB/s = {gbs / best:.1%}"))
        if name.startswith("tiny"):
            checks.append(("tiny: validate+apply <= 5 µs", va <= 5.0, f"{va:.2f} µs"))
            checks.append(("tiny: validate <= reference's validate", v <= r["graph_validate_us"],
                           f"{v:.2f} vs {r['graph_validate_us']:.2f} µs"))
    print()
    print("| target | met | measured |")
    print("| --- | --- | --- |")
    for what, ok, detail in checks:
        print(f"| {what} | {'yes' if ok else '**no**'} | {detail} |")


if __name__ == "__main__":
    main()
