#!/usr/bin/env python3
"""Plot statexfer-sim's time per step: CSV (step,transfer_us,step_us,commands,critical_us,limit_us) on stdin,
after `#` lines of the run's figures (efficiency=... limit_us=... critical_us=... clock=...), PNG path as argument.

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
    lines = sys.stdin.read().splitlines()
    figures = {}
    for line in lines:
        if line.startswith("#"):
            for item in line[1:].split():
                key, _, value = item.partition("=")
                figures[key] = value
    rows = list(csv.DictReader(line for line in lines if not line.startswith("#")))
    if not rows:
        sys.exit("plot_steps.py: no steps")
    step = [int(r["step"]) for r in rows]
    transfer = [float(r["transfer_us"]) for r in rows]
    whole = [float(r["step_us"]) for r in rows]
    commands = [int(r["commands"]) for r in rows]
    # The critical path and its limit, over the steps with commands (the others launch no transfer).
    moving = [i for i, c in enumerate(commands) if c > 0]
    critical = [float(rows[i].get("critical_us", 0) or 0) for i in moving]
    limit = [float(rows[i].get("limit_us", 0) or 0) for i in moving]
    window = max(1, len(rows) // 200)

    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(10, 6), gridspec_kw={"height_ratios": (3, 1)})
    top.plot(step, whole, lw=0.4, alpha=0.35, color="tab:gray", label="whole step")
    top.plot(step, transfer, lw=0.4, alpha=0.35, color="tab:blue", label="transfer (validate + combine + apply)")
    if window > 1:
        top.plot(step, rolling_median(whole, window), lw=1.2, color="black", label=f"whole step, median of {window}")
        top.plot(step, rolling_median(transfer, window), lw=1.2, color="tab:blue",
                 label=f"transfer, median of {window}")
    moving_steps = [step[i] for i in moving]
    if any(critical):
        top.plot(moving_steps, critical, lw=0, marker=".", ms=1.5, alpha=0.5, color="tab:red",
                 label="critical path (the step's stream in its transfer)")
    if any(limit):
        top.plot(moving_steps, limit, lw=0, marker=".", ms=1.5, alpha=0.5, color="tab:green",
                 label="limit (its bytes at the probed rates)")
    top.set_yscale("log")
    top.set_ylabel("time per step (us)")
    top.legend(loc="upper right", fontsize=8)
    title = "statexfer-sim: time per step"
    if float(figures.get("limit_us", 0) or 0) > 0:
        title += (f"; critical path {float(figures['critical_us']):.1f} us, limit {float(figures['limit_us']):.1f} us"
                  f" per step with commands: efficiency {100 * float(figures['efficiency']):.1f}%")
    top.set_title(title, fontsize=9)
    bottom.plot(step, commands, lw=0.5, color="tab:orange")
    bottom.set_ylabel("commands")
    bottom.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=120)


if __name__ == "__main__":
    main()
