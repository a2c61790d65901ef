#!/usr/bin/env python3
"""Markdown tables for perf_tests/RESULTS.md from raw JSON: statexfer-bench's
(--benchmark_out) and the reference's (run_seed.py bench or reference_shapes.py).

One table per lease: for every shape, ours in one call (validate_and_apply) and
in two calls (validate + apply, what tensor-parallel ranks run), validate alone,
the reference's validate + apply and validate, the copy kernel (the bench's
memcpy_kernel: 16-byte words, same bytes, same graph replay) and torch's copy
(the reference's memcpy_us, an eager cudaMemcpyAsync); the ratios "vs reference"
(reference time / ours) and "of copy kernel" (copy kernel time / ours), for one
call and two calls. Then issue 12's targets on what the lease measured.

usage: results_table.py [options] BENCH[,BENCH...] SEED[,SEED...] [BENCH SEED ...]
  each BENCH SEED pair is one lease (comma-join the files of one lease, e.g. the
  facts and the models runs); SEED may be - when the lease has no reference run
  --filter REGEX   only shapes whose name matches (re.search)
  --title TEXT     heading of the (first) table; default: date and device from the JSON
  --no-targets     skip the targets table
  --issue3 BENCH SEED   the older FACTS tables (issue 3's targets) instead
"""
import json
import re
import sys

STEPS = ("validate", "apply", "validate_apply", "validate_and_apply", "memcpy", "memcpy_kernel")
SHAPE_FIELDS = ("capacity", "count", "row_bytes", "page_regions", "page_bytes", "trailing")


def medians(path):
    """name -> {step: benchmark entry}, preferring the median aggregate when repetitions ran."""
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        parts = (b.get("run_name") or b["name"]).split("/")
        steps = [p for p in parts if p in STEPS]
        if not steps and parts[0] == "validate-capacity":  # validate() alone: validate-capacity/BATCH/cC
            steps = ["validate"]
        if not steps:
            continue
        key = "/".join(p for p in parts if p not in STEPS and not p.startswith(("min_time", "manual_time", "repeats")))
        prev = out.setdefault(key, {}).get(steps[0])
        if prev is None or b.get("run_type") == "aggregate":
            out[key][steps[0]] = b
    return out


def us(b):
    t = b["real_time"]
    return {"ns": t / 1e3, "us": t, "ms": t * 1e3, "s": t * 1e6}[b["time_unit"]]


def load_lease(bench_paths, seed_paths):
    """-> (context of the first bench file, [row]), rows in the bench files' order (then reference-only shapes).

    row: name, the shape fields, bytes_rw, ours {step: µs} (skipped steps left out),
    errors {step: message}, ref (the reference's record or None)."""
    context, ours = {}, {}
    for p in bench_paths:
        data = json.load(open(p))
        context = context or data.get("context", {})
        for name, steps in medians(p).items():
            ours.setdefault(name, {}).update(steps)
    ref = {}
    for p in seed_paths:
        for r in json.load(open(p)):
            ref[r["name"]] = r
    rows = []
    for name in list(ours) + [n for n in ref if n not in ours]:
        steps, r = ours.get(name, {}), ref.get(name)
        row = {"name": name, "ours": {}, "errors": {}, "ref": r}
        for step, b in steps.items():
            if b.get("error_occurred"):
                row["errors"][step] = b.get("error_message", "error")
            else:
                row["ours"][step] = us(b)
            for f in SHAPE_FIELDS + ("bytes_rw",):
                if f in b and f not in row:
                    row[f] = int(b[f])
        if r:
            for f in SHAPE_FIELDS:
                row.setdefault(f, r.get(f))
            if "bytes_written" in r:
                row.setdefault("bytes_rw", 2 * r["bytes_written"])
        row.setdefault("count", row.get("capacity"))
        rows.append(row)
    return context, rows


def ref_us(row, key):
    r = row["ref"]
    return None if not r or "error" in r or key not in r else r[key]


def size(n):
    if n is None:
        return "-"
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s:
            v = n / s
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.2f} {unit}"
    return f"{n} B"


def f1(x):
    return "-" if x is None else f"{x:.1f}"


def ratio(a, b, fmt):
    return "-" if a is None or b is None else fmt(a / b)


def lease_title(context, paths):
    return (f"{context.get('date', '?')[:16].replace('T', ' ')} UTC, {context.get('device', context.get('execution_space', '?'))}, "
            f"statexfer {context.get('statexfer_version', '?')}, Kokkos {context.get('kokkos_version', '?')} "
            f"({', '.join(paths)})")


def lease_table(rows):
    print("| shape | C | live | row | pages | one call µs | two calls µs | validate µs | reference v+a µs "
          "| ref. validate µs | copy kernel µs | torch copy µs | vs reference (one / two) | of copy kernel (one / two) "
          "| GB/s one call |")
    print("| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    x = lambda v: f"{v:.2f}x"  # noqa: E731
    pct = lambda v: f"{v:.0%}"  # noqa: E731
    for row in rows:
        o = row["ours"]
        one, two, val, copy = o.get("validate_and_apply"), o.get("validate_apply"), o.get("validate"), o.get("memcpy_kernel")
        rv, rval, torch = ref_us(row, "graph_validate_apply_us"), ref_us(row, "graph_validate_us"), ref_us(row, "memcpy_us")
        pages = f"{row.get('page_regions', '-')} × {size(row.get('page_bytes'))}" if row.get("page_regions") else "-"
        if row.get("trailing"):
            pages += f" + {row['trailing']} trailing"
        gbs = "-" if one is None or not row.get("bytes_rw") else f"{row['bytes_rw'] / one / 1e3:.0f}"
        note = ""
        if row["errors"]:
            note = " (skipped: " + "; ".join(sorted(set(row["errors"].values())))[:80] + ")"
        if row["ref"] and "error" in row["ref"]:
            note += f" (reference: {row['ref']['error'][:80]})"
        print(f"| {row['name']}{note} | {row.get('capacity', '-')} | {row.get('count', '-')} | {size(row.get('row_bytes'))} "
              f"| {pages} | {f1(one)} | {f1(two)} | {f1(val)} | {f1(rv)} | {f1(rval)} | {f1(copy)} | {f1(torch)} "
              f"| {ratio(rv, one, x)} / {ratio(rv, two, x)} | {ratio(copy, one, pct)} / {ratio(copy, two, pct)} | {gbs} |")


def targets(rows):
    """Issue 12's targets, on the shapes this lease measured."""
    checks = []
    mark = lambda ok: "-" if ok is None else ("yes" if ok else "**no**")  # noqa: E731
    for row in rows:
        o, name = row["ours"], row["name"]
        one, two, val, copy = o.get("validate_and_apply"), o.get("validate_apply"), o.get("validate"), o.get("memcpy_kernel")
        rv, rval = ref_us(row, "graph_validate_apply_us"), ref_us(row, "graph_validate_us")
        if (row.get("row_bytes") or 0) >= 1 << 20 and copy is not None:
            if one is not None:
                checks.append((f"{name}: one call within 3% of the copy kernel", one <= 1.03 * copy,
                               f"{one:.1f} vs {copy:.1f} µs ({one / copy - 1:+.1%})"))
            if two is not None:
                checks.append((f"{name}: two calls within 5% of the copy kernel", two <= 1.05 * copy,
                               f"{two:.1f} vs {copy:.1f} µs ({two / copy - 1:+.1%})"))
            if rv is not None and one is not None:
                checks.append((f"{name}: ahead of the reference (one call; two calls)", one <= rv and (two or one) <= rv,
                               f"{one:.1f}; {f1(two)} vs {rv:.1f} µs"))
        if (row.get("capacity") or 0) <= 64 and val is not None and rval is not None:
            checks.append((f"{name}: validate <= the reference's validate", val <= rval, f"{val:.2f} vs {rval:.2f} µs"))
        if name.startswith("tiny") and one is not None:
            checks.append((f"{name}: one call <= 3.5 µs", one <= 3.5, f"{one:.2f} µs"))
        if name == "validate-capacity/valid/c4096" and "validate" in o:
            checks.append((f"{name}: validate <= 30 µs", o["validate"] <= 30, f"{o['validate']:.1f} µs"))
    if not checks:
        return
    print()
    print("| target (issue 12) | met | measured |")
    print("| --- | --- | --- |")
    for what, ok, detail in checks:
        print(f"| {what} | {mark(ok)} | {detail} |")


def issue3(bench_path, seed_path):
    """The FACTS tables of issue 3 (RESULTS.md's earlier sittings)."""
    ours = medians(bench_path)
    seed = {r["name"]: r for r in json.load(open(seed_path))}
    print("| shape | statexfer v+a µs | validate_and_apply µs | validate µs | apply µs | GB/s r+w | memcpy GB/s "
          "| of memcpy | reference v+a µs | validate µs | apply µs | speed-up |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    checks = []
    for name, r in seed.items():
        s = ours.get(name)
        if not s or "validate" not in s or "apply" not in s:
            continue
        # memcpy: the faster of the captured deep_copy and the plain copy kernel
        m = min(us(s["memcpy"]), us(s["memcpy_kernel"])) if "memcpy_kernel" in s else us(s["memcpy"])
        va, v, a = us(s["validate_apply"]), us(s["validate"]), us(s["apply"])
        one = us(s["validate_and_apply"]) if "validate_and_apply" in s else None
        rw = s["validate_apply"]["bytes_rw"]
        ref = r["graph_validate_apply_us"]
        mgbs = rw / m / 1e3
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
    mark = lambda ok: "-" if ok is None else ("yes" if ok else "**no**")  # noqa: E731
    for what, ok_two, ok_one, detail in checks:
        print(f"| {what} | {mark(ok_two)} | {mark(ok_one)} | {detail} |")


def main(argv):
    args, filt, title, with_targets = [], None, None, True
    it = iter(argv)
    for a in it:
        if a == "--filter":
            filt = next(it)
        elif a == "--title":
            title = next(it)
        elif a == "--no-targets":
            with_targets = False
        elif a == "--issue3":
            issue3(next(it), next(it))
            return 0
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            args.append(a)
    if not args or len(args) % 2:
        sys.exit(__doc__)
    for i in range(0, len(args), 2):
        bench = args[i].split(",")
        seed = [] if args[i + 1] == "-" else args[i + 1].split(",")
        context, rows = load_lease(bench, seed)
        if filt:
            rows = [r for r in rows if re.search(filt, r["name"])]
        print(f"### Lease: {title if title and i == 0 else lease_title(context, bench + seed)}")
        print()
        lease_table(rows)
        if with_targets:
            targets(rows)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
