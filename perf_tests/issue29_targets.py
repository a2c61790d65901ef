#!/usr/bin/env python3
"""Issue 29's targets, met or missed with their margins, from one lease's raw files.

usage: issue29_targets.py [--baseline FILE[,FILE...]] [--no-baseline] PATH...

  PATH        JSON files, or folders whose *.json are read: statexfer-bench's
              (--benchmark_out: the partial, tier-streams, facts and models sets,
              a file of shapes such as shapes/large-batch.txt), the reference's
              (seed-bench*.json: run_seed.py bench or reference_shapes.py) and
              statexfer-sim's reports (--json); a run cut by its time limit
              leaves its bench JSON unterminated: then its console lines are
              read instead, from FILE.txt beside FILE.json (device-run's tee),
              and a .txt PATH is read as console lines too
  --baseline  the bench JSON that perf_tests/RESULTS.md's full-batch tables come
              from (default: its facts and models files of 2026-11-30); a shape
              measured here and there is compared step by step (2% noise allowed)

Targets (issue 29, "Targets"): partly filled batches, one call at most
1.03 x the copy kernel of the live bytes + 3 µs (C <= 64) or + 6 µs (C > 64);
full batches no slower than RESULTS.md and, above C = 64, within 5% of the copy
kernel; validate() at C = 4096 with 4 live at most 3 µs above C = 64; an offload
on its own stream at >= 90% of pinned memcpy with at most 1/8 of the SMs, the
device batch beside it within 5% of alone; the simulator's critical-path
transfer per step within 1.5x of its limit. Markdown on stdout; exit status 0
whatever the targets say (1 when no file could be read).
"""
import glob
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BASELINE = [os.path.join(HERE, "results", f) for f in ("h200-bench-kokkos46-2026-11-30-s16.json",
                                                        "h200-bench-kokkos46-models-2026-11-30-s16.json")]
STEPS = ("validate", "apply", "validate_apply", "validate_and_apply", "memcpy", "memcpy_kernel")


def us(b):
    t = b["real_time"]
    return {"ns": t / 1e3, "us": t, "ms": t * 1e3, "s": t * 1e6}[b["time_unit"]]


def records(paths, loaded=None):
    """(contexts, {key: {step: entry}}) over bench JSON files (or what `loaded` holds for a path); the median
    aggregate wins where repetitions ran."""
    contexts, out = [], {}
    for p in paths:
        data = (loaded or {}).get(p) or json.load(open(p))
        contexts.append((p, data.get("context", {})))
        for b in data["benchmarks"]:
            if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
                continue
            parts = [x for x in (b.get("run_name") or b["name"]).split("/")
                     if not x.startswith(("min_time", "manual_time", "repeats"))]
            step = parts[-1] if parts[-1] in STEPS or parts[0] == "tier-streams" else None
            if step is None and parts[0] == "validate-capacity":
                step = "validate"
                key = "/".join(parts)
            elif step is None:
                continue
            else:
                key = "/".join(parts[:-1])
            prev = out.setdefault(key, {}).get(step)
            if prev is None or b.get("run_type") == "aggregate" or prev.get("run_type") != "aggregate":
                out[key][step] = b
    return contexts, out


SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "m": 1e-3, "u": 1e-6, "n": 1e-9}
CONSOLE = re.compile(r"^(\S+/manual_time)\s+([0-9.]+) (ns|us|ms|s)\s+[0-9.]+ (?:ns|us|ms|s)\s+\d+\s*(.*)$")


def console_records(path):
    """A bench's console lines as its JSON would hold them: name, real time and the counters (SI suffixes, 3-6
    significant digits, as the console prints them)."""
    out = []
    for line in open(path, errors="replace"):
        m = CONSOLE.match(line.rstrip("\n"))
        if not m:
            continue
        b = {"name": m.group(1), "run_type": "iteration", "real_time": float(m.group(2)), "time_unit": m.group(3)}
        for kv in re.finditer(r"(\w+)=(-?[0-9.]+(?:e[-+]?\d+)?)([kMGTmun]?)(?:/s)?(?=\s|$)", m.group(4)):
            b[kv.group(1)] = float(kv.group(2)) * SI[kv.group(3)]
        out.append(b)
    return {"context": {"source": path}, "benchmarks": out}


def ok(b):
    return b is not None and not b.get("error_occurred")


def mark(met):
    return "-" if met is None else ("met" if met else "**missed**")


def f1(x):
    return "-" if x is None else f"{x:.1f}"


def size(n):
    if n is None:
        return "-"
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s:
            v = n / s
            return f"{v:.0f} {unit}" if v == int(v) else f"{v:.2f} {unit}"
    return f"{int(n)} B"


def partial(rec, ref):
    rows = []
    for key, steps in rec.items():
        if not key.startswith("partial/"):
            continue
        one, two, copy = steps.get("validate_and_apply"), steps.get("validate_apply"), steps.get("memcpy_kernel")
        b = one if ok(one) else (copy if ok(copy) else None)
        if b is None:
            err = next((s.get("error_message", "error") for s in steps.values() if s.get("error_occurred")), "no record")
            rows.append((key, None, err))
            continue
        rows.append((key, dict(C=int(b["capacity"]), live=int(b["count"]), bytes=b["live_bytes"], copy=b["copy_us"],
                               bound=b["bound_us"], one=us(one) if ok(one) else None,
                               two=us(two) if ok(two) else None), None))
    if not rows:
        return [], []
    print("## Partly filled batches (partial set): one call <= 1.03 x copy + 3 µs (C <= 64) or + 6 µs (C > 64)\n")
    print("| shape | C | live | live bytes | one call µs | two calls µs | copy kernel µs | bound µs | margin µs "
          "| target | two calls within the bound | reference v+a µs |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: |")
    checks = []
    for key, r, err in rows:
        if r is None:
            print(f"| {key} (skipped: {err[:80]}) | | | | | | | | | - | - | |")
            continue
        met = None if r["one"] is None else r["one"] <= r["bound"]
        two_met = None if r["two"] is None else r["two"] <= r["bound"]
        margin = None if r["one"] is None else r["bound"] - r["one"]
        rr = ref.get(key)
        rv = rr.get("graph_validate_apply_us") if rr and "error" not in rr else None
        print(f"| {key} | {r['C']} | {r['live']} | {size(r['bytes'])} | {f1(r['one'])} | {f1(r['two'])} "
              f"| {f1(r['copy'])} | {f1(r['bound'])} | {'-' if margin is None else f'{margin:+.1f}'} | {mark(met)} "
              f"| {mark(two_met)} | {f1(rv)} |")
        if met is not None:
            checks.append((key, met, margin))
    print()
    return checks, rows


def partial_matrix(rows):
    """The partial set in one table: a row of shapes per row size, a column per capacity; in each cell the one call's
    µs over the bound at 1, 2, 4 and 16 live (+: missed; "met") and the full batch over the copy kernel."""
    cells, names, caps = {}, [], set()
    for key, r, _ in rows:
        if r is None or r["one"] is None:
            continue
        name = key.split("/")[1]
        if name not in names:
            names.append(name)
        caps.add(r["C"])
        over = r["one"] - r["bound"]
        if r["live"] == r["C"]:
            text = f"full {r['one'] / r['copy']:.3f}x" + ("" if over <= 0 else f" (+{over:.1f})")
        else:
            text = "met" if over <= 0 else f"+{over:.1f}"
        cells.setdefault((name, r["C"]), []).append((r["live"], text))
    if not cells:
        return
    caps = sorted(caps)
    print("By row and capacity: µs over the bound at each live count (+: missed), then the full batch over the "
          "copy kernel\n")
    print("| rows | " + " | ".join(f"C = {c}" for c in caps) + " |")
    print("| --- | " + " | ".join("---" for _ in caps) + " |")
    for name in names:
        out = []
        for c in caps:
            got = sorted(cells.get((name, c), []))
            out.append(", ".join(t for _, t in got) if got else "-")
        print(f"| {name} | " + " | ".join(out) + " |")
    print()


def validate_targets(rec):
    cur = {}
    for key, steps in rec.items():
        m = re.fullmatch(r"partial-validate/c(\d+)/live4", key)
        if m and ok(steps.get("validate")):
            cur[int(m.group(1))] = us(steps["validate"])
    if not cur:
        return None
    print("## validate() with 4 live commands: C = 4096 at most 3 µs above C = 64\n")
    print("| C | " + " | ".join(str(c) for c in sorted(cur)) + " |")
    print("| --- | " + " | ".join("---:" for _ in cur) + " |")
    print("| µs | " + " | ".join(f"{cur[c]:.2f}" for c in sorted(cur)) + " |\n")
    if 64 in cur and 4096 in cur:
        d = cur[4096] - cur[64]
        return ("validate(): C = 4096 within 3 µs of C = 64 (4 live)", d <= 3.0,
                f"{cur[4096]:.2f} vs {cur[64]:.2f} µs ({d:+.2f} µs; margin {3.0 - d:+.2f})")
    return None


def full_batches(rec, base):
    checks = []
    compared = []
    for key, steps in rec.items():
        if key.startswith(("partial", "tier-streams")) or key not in base:
            continue
        for step in ("validate_and_apply", "validate_apply", "validate"):
            now, then = steps.get(step), base[key].get(step)
            if ok(now) and ok(then):
                a, b = us(now), us(then)
                compared.append((key, step, b, a, a <= 1.02 * b))
    if compared:
        print("## Full batches against perf_tests/RESULTS.md (baseline files), 2% noise allowed\n")
        print("| shape | step | RESULTS.md µs | now µs | change | target |")
        print("| --- | --- | ---: | ---: | ---: | --- |")
        for key, step, b, a, met in compared:
            print(f"| {key} | {step} | {b:.1f} | {a:.1f} | {a / b - 1:+.1%} | {mark(met)} |")
        print()
        slower = [c for c in compared if not c[4]]
        checks.append(("Full batches: no shape slower than RESULTS.md (+2%)", not slower,
                       f"{len(compared) - len(slower)} of {len(compared)} steps; "
                       + (f"worst {max(compared, key=lambda c: c[3] / c[2])[0]} "
                          f"{max(c[3] / c[2] - 1 for c in compared):+.1%}")))
    big = []
    for key, steps in rec.items():
        one, copy = steps.get("validate_and_apply"), steps.get("memcpy_kernel")
        if ok(one) and ok(copy) and one.get("capacity", 0) > 64 and one.get("count") == one.get("capacity"):
            big.append((key, int(one["capacity"]), us(one), us(copy)))
    if big:
        print("## Full batches above C = 64: one call within 5% of the copy kernel\n")
        print("| shape | C | one call µs | copy kernel µs | over the kernel | target |")
        print("| --- | ---: | ---: | ---: | ---: | --- |")
        for key, c, one, copy in big:
            print(f"| {key} | {c} | {one:.1f} | {copy:.1f} | {one / copy - 1:+.1%} | {mark(one <= 1.05 * copy)} |")
        print()
        worst = max(big, key=lambda b: b[2] / b[3])
        checks.append(("Full batches, C > 64: one call within 5% of the copy kernel",
                       all(one <= 1.05 * copy for _, _, one, copy in big),
                       f"{sum(one <= 1.05 * copy for _, _, one, copy in big)} of {len(big)}; worst {worst[0]} "
                       f"{worst[2] / worst[3] - 1:+.1%}"))
    return checks


def tiers(rec, contexts):
    pre = "tier-streams/qwen3.5-9b"
    if pre not in rec and not any(k.startswith(pre + "/") for k in rec):
        return []
    sms = next((int(c["device_sms"]) for _, c in contexts if "device_sms" in c), None)
    top = rec.get(pre, {})
    memcpy = top.get("memcpy_d2h_eager")
    dev_alone = top.get("device_alone")
    print("## Tier moves on their own stream (tier-streams set): offload >= 90% of pinned memcpy "
          "with <= 1/8 of the SMs; the device batch beside it within 5% of alone\n")
    print(f"Pinned memcpy D2H (eager) {f1(us(memcpy)) if ok(memcpy) else '-'} µs; "
          f"in a graph {f1(us(top['memcpy_d2h_graph'])) if ok(top.get('memcpy_d2h_graph')) else '-'} µs; "
          f"device batch alone {f1(us(dev_alone)) if ok(dev_alone) else '-'} µs; SMs {sms or '-'}.\n")
    print("| compact teams | of the SMs | offload alone µs | GB/s | of memcpy | offload beside µs "
          "| device beside µs | device alone (same iterations) µs | beside / alone | covered |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    rows = []
    for key, steps in rec.items():
        m = re.fullmatch(re.escape(pre) + r"/teams-(\d+|wave)", key)
        if not m:
            continue
        off, ob, db = steps.get("offload_alone"), steps.get("offload_beside"), steps.get("device_beside")
        teams = int(off["teams"]) if ok(off) else (int(m.group(1)) if m.group(1) != "wave" else None)
        of = off.get("of_memcpy") if ok(off) else None
        if of is None and ok(off) and ok(memcpy):
            of = us(memcpy) / us(off)
        ratio = db.get("beside_over_alone") if ok(db) else None
        rows.append((teams, m.group(1), off, ob, db, of, ratio))
    rows.sort(key=lambda r: r[0] if r[0] is not None else 1 << 30)
    for teams, label, off, ob, db, of, ratio in rows:
        share = "-" if not sms or teams is None else f"{min(teams, sms) / sms:.0%}"
        gbs = f"{off['row_bytes'] / us(off) / 1e3:.1f}" if ok(off) else "-"
        cov = db.get("covered") if ok(db) else None
        print(f"| {teams if teams is not None else label} | {share} | {f1(us(off)) if ok(off) else '-'} | {gbs} "
              f"| {'-' if of is None else f'{of:.0%}'} | {f1(us(ob)) if ok(ob) else '-'} | {f1(us(db)) if ok(db) else '-'} "
              f"| {f1(db.get('device_alone_us')) if ok(db) else '-'} | {'-' if ratio is None else f'{ratio:.3f}'} "
              f"| {'-' if cov is None else f'{cov:.0%}'} |")
    print()
    checks = []
    few = [r for r in rows if sms and r[0] is not None and r[0] <= sms / 8]
    reach = [r for r in rows if r[5] is not None and r[5] >= 0.9]
    least = min(reach, key=lambda r: r[0]) if reach else None
    if rows:
        best_few = max((r for r in few if r[5] is not None), key=lambda r: r[5], default=None)
        checks.append(("Offload on its own stream >= 90% of pinned memcpy with <= 1/8 of the SMs",
                       None if best_few is None else best_few[5] >= 0.9,
                       ("fewest teams reaching 90%: " + (f"{least[0]} ({least[5]:.0%})" if least else "none")) +
                       ("" if best_few is None else f"; best at <= SMs/8: {best_few[0]} teams, {best_few[5]:.0%}")))
        # Both halves of the target hold for one league: the offload's rate and the device batch beside it.
        both = [r for r in few if r[5] is not None and r[6] is not None and r[5] >= 0.9 and r[6] <= 1.05]
        at = [r for r in few if r[5] is not None and r[6] is not None]
        if at:
            checks.append(("One league <= SMs/8: offload >= 90% of memcpy and the device batch beside it within 5%",
                           bool(both),
                           ("met by " + ", ".join(f"{r[0]} teams ({r[5]:.1%}, {r[6] - 1:+.1%})" for r in both)
                            if both else "no league") + "; all: " +
                           ", ".join(f"{r[0]}: {r[5]:.1%}, {r[6] - 1:+.1%}" for r in at)))
    return checks


def flat(x, prefix=""):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from flat(v, f"{prefix}.{k}" if prefix else k)
    elif not isinstance(x, list):
        yield prefix, x


def sim(reports):
    if not reports:
        return []
    print("## The main job (statexfer-sim reports)\n")
    checks = []
    for path, r in reports:
        f = dict(flat(r))
        cfg = r.get("config", {})
        print(f"- `{os.path.basename(path)}`: {cfg.get('model', '?')}, {cfg.get('snapshot_rows', '?')} device and "
              f"{cfg.get('host_snapshot_rows', 0)} host snapshot rows, wall {f1(f.get('time.wall_s'))} s; transfer per "
              f"step with commands mean {f1(f.get('time.transfer_us_per_step.mean'))} µs, p50 "
              f"{f1(f.get('time.transfer_us_per_step.p50'))}, p99 {f1(f.get('time.transfer_us_per_step.p99'))}")
        found = {k: v for k, v in f.items() if re.search(r"limit|efficiency|critical", k)}
        for k, v in found.items():
            print(f"  - {k}: {v}")
        crit = next((v for k, v in found.items() if "critical" in k and k.endswith("mean") and isinstance(v, (int, float))),
                    None)
        lim = next((v for k, v in found.items() if "limit" in k and "us" in k and isinstance(v, (int, float))
                    and "critical" not in k), None)
        if crit is not None and lim:
            checks.append((f"{os.path.basename(path)}: critical path per step within 1.5x of the limit",
                           crit <= 1.5 * lim, f"{crit:.1f} vs {lim:.1f} µs ({crit / lim:.2f}x)"))
        elif not found:
            print("  - no limit or efficiency figures in this report (issue 29 item 4): read the target by hand")
        else:
            print("  - the limit fields above could not be matched to the target: read it by hand")
    print()
    return checks


def main(argv):
    baseline, paths = BASELINE, []
    it = iter(argv)
    for a in it:
        if a == "--baseline":
            baseline = next(it).split(",")
        elif a == "--no-baseline":
            baseline = []
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            paths.append(a)
    files = []
    for p in paths:
        files += sorted(glob.glob(os.path.join(p, "*.json"))) if os.path.isdir(p) else [p]
    benches, refs, reports, loaded = [], {}, [], {}
    for p in files:
        try:
            data = console_records(p) if p.endswith(".txt") else json.load(open(p))
        except (OSError, ValueError) as e:
            console = os.path.splitext(p)[0] + ".txt"
            if not os.path.isfile(console):
                print(f"issue29_targets.py: {p}: {e}", file=sys.stderr)
                continue
            print(f"issue29_targets.py: {p}: {e}; reading its console lines, {console}", file=sys.stderr)
            p, data = console, console_records(console)
        if isinstance(data, dict) and "benchmarks" in data:
            benches.append(p)
            loaded[p] = data
        elif isinstance(data, list) and all(isinstance(r, dict) and "name" in r for r in data):
            refs.update({r["name"]: r for r in data})
        elif isinstance(data, dict) and str(data.get("format", "")).startswith("statexfer-sim"):
            reports.append((p, data))
    if not benches and not reports:
        print(__doc__, file=sys.stderr)
        return 1
    contexts, rec = records(benches, loaded)
    base = records([b for b in baseline if os.path.isfile(b)])[1] if baseline else {}
    c = contexts[0][1] if contexts else {}
    print(f"# Issue 29's targets: {c.get('date', '?')[:16].replace('T', ' ')}, {c.get('device', c.get('execution_space', '?'))}, "
          f"statexfer {c.get('statexfer_version', '?')}, Kokkos {c.get('kokkos_version', '?')}\n")
    print("Files: " + ", ".join(os.path.basename(p) for p in benches + [r[0] for r in reports]) + "\n")
    for p, ctx in contexts:
        if "partial_skipped" in ctx:
            print(f"Partial shapes left out for memory ({os.path.basename(p)}, budget {ctx.get('partial_budget_GiB')} "
                  f"GiB): {ctx['partial_skipped']}\n")
    checks = []
    pchecks, prows = partial(rec, refs)
    partial_matrix(prows)
    if pchecks:
        missed = [c for c in pchecks if not c[1]]
        worst = min(pchecks, key=lambda c: c[2])
        checks.append(("Partly filled batches: one call within the bound", not missed,
                       f"{len(pchecks) - len(missed)} of {len(pchecks)} shapes; least margin {worst[0]} {worst[2]:+.1f} µs"))
    v = validate_targets(rec)
    if v:
        checks.append(v)
    checks += full_batches(rec, base)
    checks += tiers(rec, contexts)
    checks += sim(reports)
    print("## Summary\n")
    print("| target | status | measured |")
    print("| --- | --- | --- |")
    for what, met, detail in checks:
        print(f"| {what} | {mark(met)} | {detail} |")
    if not checks:
        print("| (no target's records in these files) | - | - |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
