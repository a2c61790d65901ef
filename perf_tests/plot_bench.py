#!/usr/bin/env python3
"""Plot GB/s (bytes read + written) against row bytes and against C, for both
sides of one lease: statexfer in one call (validate_and_apply) and in two calls
(validate + apply), the reference's validate + apply, the copy kernel (the
bench's memcpy_kernel) and torch's copy (the reference's memcpy_us).

Panels "against row bytes": the shapes of one C (and live count) with at least
two row sizes (the row sweep at C = 16; the models set at C = 1, 4, 8, 32).
Panels "against C": the shapes of one row size and page layout with at least two
capacities (the capacity sweep; each model of the models set).

usage: plot_bench.py OUT_PNG BENCH[,BENCH...] [SEED[,SEED...]] [--filter REGEX] [--title TEXT]
  BENCH: statexfer-bench --benchmark_out JSON; SEED: run_seed.py bench or
  reference_shapes.py JSON (optional). Needs matplotlib (python3-matplotlib).
"""
import math
import os
import re
import sys
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from results_table import load_lease, ref_us, size  # noqa: E402

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SERIES = (  # label, colour, style, time of a row in µs
    ("statexfer one call", "tab:blue", "-", lambda r: r["ours"].get("validate_and_apply")),
    ("statexfer two calls", "tab:cyan", "--", lambda r: r["ours"].get("validate_apply")),
    ("reference v+a", "tab:red", "-", lambda r: ref_us(r, "graph_validate_apply_us")),
    ("copy kernel (same bytes)", "tab:gray", ":", lambda r: r["ours"].get("memcpy_kernel")),
    ("torch copy (eager)", "black", ":", lambda r: ref_us(r, "memcpy_us")),
)


def gbs(row, t):
    return None if t is None or not row.get("bytes_rw") else row["bytes_rw"] / t / 1e3


def panels(rows):
    by_c, by_row = defaultdict(list), defaultdict(list)
    for r in rows:
        if r.get("capacity") is None or r.get("row_bytes") is None:
            continue
        by_c[(r["capacity"], r.get("count"))].append(r)
        by_row[(r["row_bytes"], r.get("page_regions"), r.get("page_bytes"), r.get("trailing"))].append(r)
    out = []
    order = lambda kv: tuple(-1 if v is None else v for v in kv[0])  # noqa: E731 - older JSON lacks fields
    for (c, n), rs in sorted(by_c.items(), key=order):
        if len({r["row_bytes"] for r in rs}) >= 2:
            title = f"against row bytes: C = {c}" + (f", {n} live" if n != c else "")
            out.append((title, "row bytes", "row_bytes", rs))
    for (rb, pr, pb, tr), rs in sorted(by_row.items(), key=order):
        if len({r["capacity"] for r in rs}) >= 2:
            title = f"against C: rows of {size(rb)}" + (f", {pr} × {size(pb)} pages" if pr else "") + \
                    (f" + {tr} trailing" if tr else "")
            out.append((title, "C (commands per step)", "capacity", rs))
    return out


def main(argv):
    args, filt, title = [], None, None
    it = iter(argv)
    for a in it:
        if a == "--filter":
            filt = next(it)
        elif a == "--title":
            title = next(it)
        elif a in ("-h", "--help"):
            print(__doc__)
            return 0
        else:
            args.append(a)
    if len(args) not in (2, 3):
        sys.exit(__doc__)
    out_png, bench = args[0], args[1].split(",")
    seed = args[2].split(",") if len(args) > 2 and args[2] != "-" else []
    context, rows = load_lease(bench, seed)
    rows = [r for r in rows if r["ours"]]  # the bench's shapes (a reference file may hold more)
    if filt:
        rows = [r for r in rows if re.search(filt, r["name"])]
    ps = panels(rows)
    if not ps:
        sys.exit("plot_bench.py: no group of shapes varies row bytes or C (need two sizes of one C, or two C of one size)")
    cols = min(3, len(ps))
    nrows = math.ceil(len(ps) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 3.8 * nrows), squeeze=False)
    for ax, (ptitle, xlabel, xkey, rs) in zip(axes.flat, ps):
        for label, colour, style, time in SERIES:
            pts = sorted((r[xkey], gbs(r, time(r))) for r in rs if gbs(r, time(r)) is not None)
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=colour, marker="o", markersize=3.5,
                        label=label)
        ax.set_xscale("log", base=2)
        if xkey == "row_bytes":
            ticks = sorted({r["row_bytes"] for r in rs})
            ax.set_xticks(ticks)
            ax.set_xticklabels([size(t).replace(" ", "") for t in ticks], rotation=45, fontsize=7)
        else:
            ticks = sorted({r["capacity"] for r in rs})
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(t) for t in ticks], fontsize=8)
        ax.set_title(ptitle, fontsize=9)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel("GB/s (read + written)", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(ps):]:
        ax.axis("off")
    legend = {}
    for ax in axes.flat:
        for h, label in zip(*ax.get_legend_handles_labels()):
            legend.setdefault(label, h)
    labels = [s[0] for s in SERIES if s[0] in legend]
    handles = [legend[label] for label in labels]
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False)
    dev = context.get("device", context.get("execution_space", ""))
    per = "per CUDA graph replay" if context.get("execution_space") == "Cuda" else "per call"
    fig.suptitle(title or f"{dev}, {context.get('date', '')[:16].replace('T', ' ')} UTC: {per} "
                 f"(statexfer {context.get('statexfer_version', '?')}, Kokkos {context.get('kokkos_version', '?')})",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.97))
    fig.savefig(out_png, dpi=120)
    print(f"plot_bench.py: {out_png}: {len(ps)} panels, {len(rows)} shapes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
