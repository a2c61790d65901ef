#!/usr/bin/env python3
"""Plot statexfer-sim's time per step: CSV (step,transfer_us,step_us,commands) on stdin, PNG path as argument.

Run by `statexfer-sim --plot FILE.png`; usable by hand too:
    python3 plot_steps.py out.png < steps.csv
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rolling_median(values, window):
    out = []
    for i in range(len(values)):
        chunk = sorted(values[max(0, i - window + 1) : i + 1])
        out.append(chunk[len(chunk) // 2])
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: plot_steps.py OUT.png < steps.csv")
    rows = list(csv.DictReader(sys.stdin))
    if not rows:
        sys.exit("plot_steps.py: no steps")
    step = [int(r["step"]) for r in rows]
    transfer = [float(r["transfer_us"]) for r in rows]
    whole = [float(r["step_us"]) for r in rows]
    commands = [int(r["commands"]) for r in rows]
    window = max(1, len(rows) // 200)

    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 6), gridspec_kw={"height_ratios": (3, 1)})
    top.plot(step, whole, lw=0.4, alpha=0.35, color="tab:gray", label="whole step")
    top.plot(step, transfer, lw=0.4, alpha=0.35, color="tab:blue", label="transfer (validate + combine + apply)")
    if window > 1:
        top.plot(step, rolling_median(whole, window), lw=1.2, color="black", label=f"whole step, median of {window}")
        top.plot(step, rolling_median(transfer, window), lw=1.2, color="tab:blue",
                 label=f"transfer, median of {window}")
    top.set_yscale("log")
    top.set_ylabel("time per step (us)")
    top.legend(loc="upper right", fontsize=8)
    top.set_title("statexfer-sim: time per step")
    bottom.plot(step, commands, lw=0.5, color="tab:orange")
    bottom.set_ylabel("commands")
    bottom.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=120)


if __name__ == "__main__":
    main()
