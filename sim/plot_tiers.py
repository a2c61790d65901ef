#!/usr/bin/env python3
"""The host tier's curve: statexfer-sim at a fixed device snapshot budget and a
sweep of host snapshot rows N, as a table (always) and a PNG (with matplotlib).

Run the sweep here and plot it:
    plot_tiers.py --sim build/openmp/sim/statexfer-sim --rows 0 4 16 64 256 \\
        --json perf_tests/results/host-sim-tiers-DATE.json --png perf_tests/results/host-sim-tiers-DATE.png \\
        -- --requests 4000 --snapshot-rows 32
Or plot reports written elsewhere (tools/gpu/device-run sim-tiers: one
statexfer-sim --json report per N):
    plot_tiers.py --reports OUT/sim-tiers-*.json --json combined.json --png tiers.png

The PNG needs matplotlib (this Python, or /usr/bin/python3 on this host); without
it the script says so and still prints the table and writes the JSON.
"""
import argparse
import json
import subprocess
import sys


def summary(report):
    """The curve's figures of one statexfer-sim --json report."""
    tier = report.get("host_tier", {})
    cache, tokens, time = report["prefix_cache"], report["tokens"], report["time"]
    admitted = report["requests"]["admitted"]
    return {
        "host_rows": report["config"].get("host_snapshot_rows", 0),
        "snapshot_rows": report["config"]["snapshot_rows"],
        "hit_rate": cache["hit_rate"],
        "hits": cache["hits"],
        "admitted": admitted,
        "device_hits": tier.get("device_hits", cache["hits"]),
        "host_hits": tier.get("host_hits", 0),
        "restored_tokens": tokens["restored"],
        "prompt_tokens": tokens["prompt"],
        "token_hit_rate": cache["token_hit_rate"],
        "offloads": tier.get("offloads", 0),
        "onloads": tier.get("onloads", 0),
        "host_restores": tier.get("host_restores", 0),
        "bytes_device_to_host": tier.get("this_rank_bytes_device_to_host", 0),
        "bytes_host_to_device": tier.get("this_rank_bytes_host_to_device", 0),
        "steps": report["steps"],
        "step_us_mean": time["step_us"]["mean"],
        "transfer_us_mean": time["transfer_us_per_step"]["mean"],
        "backend": report["backend"],
    }


def mib(b):
    return f"{b / 2**20:.1f}"


def table(rows):
    head = (
        f"{'N':>5} {'hit rate':>8} {'dev hits':>8} {'host hits':>9} {'restored tok':>12} {'tok %':>6} "
        f"{'offload':>7} {'onload':>6} {'h-restore':>9} {'D->H MiB':>8} {'H->D MiB':>8} {'steps':>6} "
        f"{'step us':>8} {'xfer us':>8}"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['host_rows']:>5} {100 * r['hit_rate']:>7.1f}% {r['device_hits']:>8} {r['host_hits']:>9} "
            f"{r['restored_tokens']:>12} {100 * r['token_hit_rate']:>5.1f}% {r['offloads']:>7} {r['onloads']:>6} "
            f"{r['host_restores']:>9} {mib(r['bytes_device_to_host']):>8} {mib(r['bytes_host_to_device']):>8} "
            f"{r['steps']:>6} {r['step_us_mean']:>8.1f} {r['transfer_us_mean']:>8.1f}"
        )
    return "\n".join(lines)


def plot(rows, png):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            f"plot_tiers.py: matplotlib is missing in {sys.executable} (try /usr/bin/python3); "
            f"{png} not written, the table above is the result",
            file=sys.stderr,
        )
        return False
    labels = [str(r["host_rows"]) for r in rows]
    x = range(len(rows))
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    dev = [100 * r["device_hits"] / max(r["admitted"], 1) for r in rows]
    host = [100 * r["host_hits"] / max(r["admitted"], 1) for r in rows]
    ax1.bar(x, dev, label="device snapshot hits", color="tab:blue")
    ax1.bar(x, host, bottom=dev, label="host snapshot hits", color="tab:orange")
    ax1.set_xticks(list(x), labels)
    ax1.set_xlabel("host snapshot rows N")
    ax1.set_ylabel("prefix hit rate (% of admissions)")
    ax1.set_ylim(0, 100)
    ax1.legend(loc="upper left")
    ax2.plot(list(x), [r["restored_tokens"] / 1e6 for r in rows], marker="o", color="tab:green")
    ax2.set_xticks(list(x), labels)
    ax2.set_xlabel("host snapshot rows N")
    ax2.set_ylabel("restored prompt tokens (millions)")
    ax2.set_ylim(bottom=0)
    for i, r in enumerate(rows):
        ax2.annotate(f"{100 * r['token_hit_rate']:.0f}%", (i, r["restored_tokens"] / 1e6), textcoords="offset points",
                     xytext=(0, 6), ha="center", fontsize=8)
    first = rows[0]
    fig.suptitle(
        f"statexfer-sim host tier: {first['snapshot_rows']} device snapshot rows, {first['admitted']} requests "
        f"({first['backend']})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    return True


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sim", help="statexfer-sim to run the sweep with (arguments after -- go to every run)")
    p.add_argument("--rows", type=int, nargs="+", default=[0, 4, 16, 64, 256], help="host snapshot rows N")
    p.add_argument("--reports", nargs="+", default=[], help="statexfer-sim --json reports instead of running")
    p.add_argument("--json", help="write the summaries and the raw reports here")
    p.add_argument("--png", help="write the plot here")
    a = p.parse_args(argv)
    if bool(a.sim) == bool(a.reports):
        p.error("give --sim (run the sweep) or --reports (plot existing reports)")
    reports = []
    if a.sim:
        for n in a.rows:
            cmd = [a.sim, *extra, "--host-snapshot-rows", str(n), "--no-progress", "--quiet", "--json", "/dev/stdout"]
            print("+ " + " ".join(cmd), file=sys.stderr)
            reports.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout))
    else:
        for path in a.reports:
            with open(path) as f:
                reports.append(json.load(f))
    rows = sorted((summary(r) for r in reports), key=lambda r: r["host_rows"])
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"format": "statexfer-sim-tiers/1", "curve": rows, "reports": reports,
                       "sim_args": extra}, f, indent=1)
            f.write("\n")
    if a.png and plot(rows, a.png):
        print(f"plot: {a.png}")


if __name__ == "__main__":
    main()
