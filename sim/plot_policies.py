#!/usr/bin/env python3
"""Snapshot policies against the snapshot budget: statexfer-sim over policies x
device snapshot rows x host snapshot rows on one trace, as a table (always), a
JSON file and a PNG (with matplotlib): token hit ratio and snapshot bytes
against device snapshot rows, one curve per policy (and host rows), beside the
trace's attention-only bound.

Run the sweep and plot it (arguments after -- go to every run):
    plot_policies.py --sim build/openmp/sim/statexfer-sim --policies ends last every:8 all \\
        --rows 64 256 1024 --host-rows 0 1024 --json sweep.json --png sweep.png \\
        -- --trace ../shared/traces/mooncake-conversation_trace.jsonl --model qwen3.5-9b --row-bytes 50304
Or plot reports written elsewhere (statexfer-sim --json reports, or sweeps this
tool wrote):
    plot_policies.py --reports OUT/policies-*.json --json sweep.json --png sweep.png

The hit ratios and snapshot counts depend on the trace, the policy, the rows
and the scheduling options, not on the rows' bytes: a host run with scaled rows
gives the GPU run's curves (its bytes are the scaled rows'). The PNG needs
matplotlib (this Python, or /usr/bin/python3 on this host).
"""
import argparse
import concurrent.futures
import json
import subprocess
import sys
import tempfile


def summary(report):
    """The sweep's figures of one statexfer-sim --json report."""
    cfg, reuse, snaps = report["config"], report["reuse"], report["snapshots"]
    bound = reuse.get("attention_bound", {})
    tier = report.get("host_tier", {})
    cache, queue, time = report["prefix_cache"], report["queueing"], report["time"]
    return {
        "policy": cfg["snapshot_policy"],
        "snapshot_rows": cfg["snapshot_rows"],
        "host_rows": cfg.get("host_snapshot_rows", 0),
        "model": cfg.get("model", ""),
        "row_bytes": cfg["row_bytes"],
        "token_hit_ratio": reuse["token_hit_ratio"],
        "restored_tokens": reuse["restored_tokens"],
        "input_tokens": reuse["input_tokens"],
        "bound_unbounded": bound.get("unbounded_ratio"),
        "bound_budget": bound.get("budget_ratio"),
        "snapshots": snaps["taken"],
        "snapshot_bytes": snaps["bytes_all_ranks"],
        "snapshot_bytes_per_step": snaps["bytes_per_step"],
        "snapshot_bytes_per_restored_token": snaps["bytes_per_restored_token"],
        "hits": cache["hits"],
        "device_hits": tier.get("device_hits", cache["hits"]),
        "host_hits": tier.get("host_hits", 0),
        "evictions": cache["evictions"],
        "host_evictions": tier.get("host_evictions", 0),
        "offloads": tier.get("offloads", 0),
        "queue_ms_mean": queue["delay_ms"]["mean"],
        "queue_ms_p99": queue["delay_ms"]["p99"],
        "steps": report["steps"],
        "wall_s": time["wall_s"],
        "transfer_s": time["transfer_s"],
        "step_us_mean": time["step_us"]["mean"],
        "backend": report["backend"],
    }


def gib(b):
    return b / 2**30


def table(rows):
    head = (
        f"{'policy':>8} {'rows':>6} {'host':>6} {'hit ratio':>9} {'bound@N':>8} {'snapshots':>9} {'snap GiB':>9} "
        f"{'MiB/step':>9} {'KiB/rtok':>9} {'dev hits':>8} {'host hits':>9} {'evictions':>9} {'queue ms':>9} "
        f"{'steps':>7} {'wall s':>7}"
    )
    lines = [head]
    for r in rows:
        budget = "-" if r["bound_budget"] is None else f"{100 * r['bound_budget']:.2f}%"
        lines.append(
            f"{r['policy']:>8} {r['snapshot_rows']:>6} {r['host_rows']:>6} {100 * r['token_hit_ratio']:>8.2f}% "
            f"{budget:>8} {r['snapshots']:>9} {gib(r['snapshot_bytes']):>9.1f} "
            f"{r['snapshot_bytes_per_step'] / 2**20:>9.2f} {r['snapshot_bytes_per_restored_token'] / 1024:>9.1f} "
            f"{r['device_hits']:>8} {r['host_hits']:>9} {r['evictions']:>9} {r['queue_ms_mean']:>9.0f} "
            f"{r['steps']:>7} {r['wall_s']:>7.1f}"
        )
    bound = next((r["bound_unbounded"] for r in rows if r["bound_unbounded"] is not None), None)
    if bound is not None:
        lines.append(f"attention-only bound (unbounded cache): {100 * bound:.2f}% of input tokens")
    return "\n".join(lines)


def plot(rows, png, title):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(
            f"plot_policies.py: matplotlib is missing in {sys.executable} (try /usr/bin/python3); "
            f"{png} not written, the table above is the result",
            file=sys.stderr,
        )
        return False
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    hosts = sorted(set(r["host_rows"] for r in rows))
    styles = ["-", "--", ":", "-."]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.6))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, p in enumerate(policies):
        for k, h in enumerate(hosts):
            pts = sorted((r for r in rows if r["policy"] == p and r["host_rows"] == h), key=lambda r: r["snapshot_rows"])
            if not pts:
                continue
            x = [r["snapshot_rows"] for r in pts]
            label = p if len(hosts) == 1 else f"{p}, {h} host rows"
            c, s = colors[i % len(colors)], styles[k % len(styles)]
            ax1.plot(x, [100 * r["token_hit_ratio"] for r in pts], marker="o", color=c, linestyle=s, label=label)
            ax2.plot(x, [gib(r["snapshot_bytes"]) for r in pts], marker="o", color=c, linestyle=s, label=label)
    bound = next((r["bound_unbounded"] for r in rows if r["bound_unbounded"] is not None), None)
    if bound is not None:
        ax1.axhline(100 * bound, color="black", linewidth=1, label=f"attention-only bound {100 * bound:.2f}%")
        budget = sorted({(r["snapshot_rows"] + r["host_rows"], r["bound_budget"]) for r in rows if r["host_rows"] == 0})
        if budget:
            ax1.plot([b[0] for b in budget], [100 * b[1] for b in budget], color="gray", linewidth=1, linestyle=":",
                     label="bound at N blocks (LRU)")
    for ax in (ax1, ax2):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("device snapshot rows")
    ax1.set_ylabel("token hit ratio (% of input tokens)")
    ax1.set_ylim(bottom=0)
    row_bytes = sorted({r["row_bytes"] for r in rows})
    ax2.set_ylabel(f"snapshot bytes (GiB, all ranks; rows of {', '.join(f'{b:,}' for b in row_bytes)} B)")
    ax2.set_yscale("log")
    ax1.legend(fontsize=7, loc="best")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    return True


def run_one(sim, extra, policy, n, h):
    # The report in a file of its own: a host backend may print warnings on stdout.
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        cmd = [sim, *extra, "--snapshot-policy", policy, "--snapshot-rows", str(n), "--host-snapshot-rows", str(h),
               "--no-progress", "--quiet", "--json", report.name]
        print("+ " + " ".join(cmd), file=sys.stderr)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        with open(report.name) as f:
            return json.load(f)


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sim", help="statexfer-sim to run the sweep with (arguments after -- go to every run)")
    p.add_argument("--policies", nargs="+", default=["ends", "last", "every:8", "all"])
    p.add_argument("--rows", type=int, nargs="+", default=[64, 256, 1024], help="device snapshot rows")
    p.add_argument("--host-rows", type=int, nargs="+", default=[0], help="host snapshot rows")
    p.add_argument("--host-policies", nargs="+",
                   help="the policies that also run with the host rows above 0 (default: every policy)")
    p.add_argument("--jobs", type=int, default=1, help="runs at once (host runs; one GPU runs one)")
    p.add_argument("--reports", nargs="+", default=[], help="statexfer-sim --json reports instead of running")
    p.add_argument("--json", help="write the summaries and the raw reports here")
    p.add_argument("--png", help="write the plot here")
    p.add_argument("--title", help="the plot's title")
    a = p.parse_args(argv)
    if bool(a.sim) == bool(a.reports):
        p.error("give --sim (run the sweep) or --reports (plot existing reports)")
    reports = []
    if a.sim:
        tiered = a.host_policies if a.host_policies else a.policies
        grid = [(pol, n, h) for pol in a.policies for h in a.host_rows for n in a.rows if h == 0 or pol in tiered]
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            reports = list(pool.map(lambda g: run_one(a.sim, extra, *g), grid))
    else:
        for path in a.reports:  # a report, or a sweep this tool wrote (its reports)
            with open(path) as f:
                data = json.load(f)
            reports.extend(data["reports"] if data.get("format") == "statexfer-sim-policies/1" else [data])
    rows = sorted((summary(r) for r in reports), key=lambda r: (r["policy"], r["host_rows"], r["snapshot_rows"]))
    print(table(rows))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"format": "statexfer-sim-policies/1", "sweep": rows, "reports": reports, "sim_args": extra},
                      f, indent=1)
            f.write("\n")
    if a.png:
        first = rows[0]
        title = a.title or (
            f"statexfer-sim snapshot policies: {first['input_tokens']:,} input tokens, "
            f"{first['model'] or str(first['row_bytes']) + ' B rows'} ({first['backend']})"
        )
        if plot(rows, a.png, title):
            print(f"plot: {a.png}")


if __name__ == "__main__":
    main()
