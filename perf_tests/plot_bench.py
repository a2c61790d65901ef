#!/usr/bin/env python3
"""Plot statexfer-bench JSON: GB/s (read + write) of validate+apply against row bytes,
with a device copy of the same byte count, from the sweep-rows benchmarks.

usage: plot_bench.py BENCH_JSON OUT_PNG [TITLE]
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    data = json.load(open(sys.argv[1]))
    series = {"validate_apply": {}, "memcpy": {}, "memcpy_kernel": {}}
    for b in data["benchmarks"]:
        name = b["name"]
        if not name.startswith("sweep-rows") or b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        step = name.split("/")[2]
        if step in series:
            series[step][int(b["row_bytes"])] = b["GB_rw"]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    labels = {"validate_apply": "statexfer validate+apply", "memcpy": "captured deep_copy (memcpy), same bytes",
              "memcpy_kernel": "plain 16-byte copy kernel, same bytes"}
    for step, points in series.items():
        if not points:
            continue
        xs = sorted(points)
        ax.plot(xs, [points[x] for x in xs], marker="o", label=labels[step])
    ax.set_xscale("log", base=2)
    ax.set_xlabel("row bytes (16 commands, one 1 KiB partial page each)")
    ax.set_ylabel("GB/s, bytes read + written")
    ctx = data.get("context", {})
    title = sys.argv[3] if len(sys.argv) > 3 else f"{ctx.get('device', ctx.get('execution_space', ''))}: per CUDA graph replay"
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=120)


if __name__ == "__main__":
    main()
