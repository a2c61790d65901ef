#!/usr/bin/env python3
"""Time the reference module (run_seed.py's bench_config) on statexfer-bench's shapes.

The same shapes as statexfer-bench, in the same lease: the built-in sets through
the bench binary (`statexfer-bench --set NAME --list-shapes`), or specs
NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]] on the command line or
in a file (one a line, # comments). Writes a JSON list in run_seed.py bench's
format (one object per shape: graph_validate_apply_us, graph_validate_us,
graph_apply_us, memcpy_us (torch's copy), ...), which perf_tests/results_table.py
and plot_bench.py read beside the bench's JSON.

usage: reference_shapes.py --reference DIR [--set NAME]... [--shape SPEC]... [--shapes FILE]...
                           [--bench BIN] [--filter REGEX] [--json OUT] [--list]

  --reference DIR  the folder holding run_seed.py (shared/conformance/reference;
                   on the GPU machine the staged copy .carry/reference)
  --bench BIN      statexfer-bench, to list a --set (default: .carry/bin/statexfer-bench,
                   then build/cuda/perf_tests/statexfer-bench)
  --filter REGEX   only the shapes whose name matches (re.search)
  --list           print the shapes and exit (no GPU, no torch needed)
Needs torch with CUDA and the reference module's imports (numpy, triton).
"""
import argparse
import gc
import json
import os
import re
import subprocess
import sys
import time

UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class SpecError(ValueError):
    pass


def parse_bytes(text, field):
    """The rules of shapes.cpp's parse_bytes: 4096, 64KiB, 49.125MiB (whole bytes)."""
    m = re.fullmatch(r"(\d+)(?:\.(\d+))?\s*([A-Za-z]*)", text.strip())
    if not m or m.group(3).lower() not in UNITS:
        raise SpecError(f"{field}: expected bytes (a number, optionally with KiB, MiB or GiB), got '{text}'")
    scale = UNITS[m.group(3).lower()]
    frac = m.group(2) or ""
    num = int(m.group(1) + frac) * scale
    den = 10 ** len(frac)
    if num % den:
        raise SpecError(f"{field}: '{text}' is not a whole number of bytes")
    return num // den


def parse_spec(spec):
    """NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]] -> dict, as statexfer-bench parses it."""
    spec = spec.strip()
    f = [p.strip() for p in spec.split(":")]
    try:
        if not 5 <= len(f) <= 7:
            raise SpecError(f"expected NAME:C:ROW_BYTES:PAGE_REGIONS:PAGE_BYTES[:TRAILING[:COUNT]], got {len(f)} field(s)")

        def count(text, field):
            if not re.fullmatch(r"\d{1,12}", text):
                raise SpecError(f"{field}: expected a non-negative integer, got '{text}'")
            return int(text)

        name = f[0]
        if not name or not re.fullmatch(r"[A-Za-z0-9._+/-]+", name) or "//" in name or name[0] == "/" or name[-1] == "/":
            raise SpecError(f"NAME: '{name}' (allowed: letters, digits, . _ - + /, no empty /-separated part)")
        C = count(f[1], "C")
        if C < 1 or C > 4096 or C & (C - 1):
            raise SpecError(f"C: must be a power of two from 1 to 4096, got {f[1]}")
        row = parse_bytes(f[2], "ROW_BYTES")
        if row < 1:
            raise SpecError(f"ROW_BYTES: must be at least 1, got {f[2]}")
        regions = count(f[3], "PAGE_REGIONS")
        page = parse_bytes(f[4], "PAGE_BYTES")
        trailing = count(f[5], "TRAILING") if len(f) > 5 else 0
        if page < 1 and (regions or trailing):
            raise SpecError(f"PAGE_BYTES: must be at least 1 when there are page regions or trailing bindings, got {f[4]}")
        n = count(f[6], "COUNT") if len(f) > 6 else C
        if not 1 <= n <= C:
            raise SpecError(f"COUNT: must be from 1 to C = {C}, got {f[6]}")
    except SpecError as e:
        raise SpecError(f"shape '{spec}': {e}") from None
    return {"name": name, "C": C, "row_bytes": row, "page_regions": regions, "page_bytes": page,
            "trailing": trailing, "count": n}


def read_specs(lines, where):
    out = []
    for number, line in enumerate(lines, 1):
        line = line.split("#", 1)[0].strip()
        if line:
            try:
                out.append(parse_spec(line))
            except SpecError as e:
                raise SpecError(f"{where}:{number}: {e}") from None
    return out


def find_bench(given):
    for path in [given] if given else [os.path.join(ROOT, ".carry/bin/statexfer-bench"),
                                       os.path.join(ROOT, "build/cuda/perf_tests/statexfer-bench")]:
        if path and os.access(path, os.X_OK):
            return path
    raise SpecError("--set needs statexfer-bench to list the set: give --bench BIN")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", help="folder holding run_seed.py")
    ap.add_argument("--set", action="append", default=[], help="built-in set (facts, models, all), listed by --bench")
    ap.add_argument("--shape", action="append", default=[])
    ap.add_argument("--shapes", action="append", default=[])
    ap.add_argument("--bench")
    ap.add_argument("--filter")
    ap.add_argument("--json")
    ap.add_argument("--list", action="store_true")
    a = ap.parse_args()
    try:
        shapes = []
        for name in a.set:
            listing = subprocess.run([find_bench(a.bench), "--set", name, "--list-shapes"], check=True,
                                     capture_output=True, text=True).stdout
            shapes += read_specs(listing.splitlines(), f"statexfer-bench --set {name} --list-shapes")
        shapes += [parse_spec(s) for s in a.shape]
        for path in a.shapes:
            with open(path) as f:
                shapes += read_specs(f, path)
        if not shapes:
            raise SpecError("no shapes: give --set, --shape or --shapes")
        seen = set()
        for s in shapes:
            if s["name"] in seen:
                raise SpecError(f"shape name '{s['name']}' is given twice")
            seen.add(s["name"])
    except (SpecError, OSError, subprocess.CalledProcessError) as e:
        print(f"reference_shapes.py: {e}", file=sys.stderr)
        return 2
    if a.filter:
        shapes = [s for s in shapes if re.search(a.filter, s["name"])]
    if a.list:
        for s in shapes:
            print(s)
        return 0
    if not a.reference or not os.path.isfile(os.path.join(a.reference, "run_seed.py")):
        print(f"reference_shapes.py: --reference must name the folder of run_seed.py, got {a.reference!r}", file=sys.stderr)
        return 2

    sys.path.insert(0, os.path.abspath(a.reference))
    import torch  # noqa: E402
    import run_seed  # noqa: E402

    device = torch.cuda.get_device_name()
    print(device, f"torch {torch.__version__}", f"{len(shapes)} shapes", flush=True)
    out, failed = [], 0
    for s in shapes:
        t0 = time.time()
        try:
            r = run_seed.bench_config(s["name"], s["C"], s["row_bytes"], s["page_regions"], s["page_bytes"],
                                      trailing=s["trailing"], count=s["count"])
        except Exception as e:  # noqa: BLE001 - one shape's failure (out of memory, a refused layout) is recorded
            failed += 1
            r = dict(s, error=f"{type(e).__name__}: {e}")
        r["device"], r["torch"], r["wall_s"] = device, torch.__version__, round(time.time() - t0, 2)
        print(json.dumps(r), flush=True)
        out.append(r)
        gc.collect()
        torch.cuda.empty_cache()
        if a.json:  # after every shape: a run cut short keeps what it measured
            with open(a.json, "w") as f:
                json.dump(out, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
