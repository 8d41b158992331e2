"""Merges the twin runs of compare_benchmarks.sh into one markdown table per family.

    python3 tools/torch2/compare_benchmarks.py OUT_DIR FAMILY...

Reads OUT_DIR/<family>_vs_libtorch.json and <family>_vs_torch2.json (Google Benchmark JSON with
aggregates). A case BM_X (ours) pairs with BM_Libtorch_X in the same binary; the ratio is the
ratio of their medians (wall time), so below 1 ours is faster. Our own median is shown for
each twin's run: both binaries contain the same code for our cases, so a large gap between
the two means the machine's load changed between the runs.

With rounds (OUT_DIR/round1, round2, ...: compare_benchmarks.sh's ROUNDS), each time is the median
over the rounds, each ratio the median of the rounds' same-run ratios, followed by their range.
"""

import json
import os
import statistics
import sys

TWINS = [("libtorch", "1.13"), ("torch2", "2.x")]
UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}
# Gap between our medians in the two twins' runs worth a warning.
OURS_DRIFT = 0.15


def load(path):
    """{case name: median wall time in ns}, context dict; or None when the run is missing."""
    if not os.path.exists(path):
        return None
    with open(path) as f:
        data = json.load(f)
    medians = {}
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b.get("run_name", b["name"])
        medians[name] = b["real_time"] * UNIT_NS[b.get("time_unit", "ns")]
    return medians, data.get("context", {})


def fmt_time(ns):
    if ns is None:
        return ""
    for unit, scale in [("s", 1e9), ("ms", 1e6), ("us", 1e3)]:
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_ratio(ratios):
    """The median of a case's per-round ratios (ours / theirs), with their range if several."""
    if not ratios:
        return ""

    def text(r):
        return f"{r:.2g}" if r < 0.1 else f"{r:.2f}"

    r = statistics.median(ratios)
    spread = f" ({text(min(ratios))}-{text(max(ratios))})" if len(ratios) > 1 else ""
    return f"**{text(r)} (slower)**{spread}" if r > 1.0 else f"{text(r)}{spread}"


def round_dirs(out_dir):
    """OUT_DIR's round<r> folders in order, or [OUT_DIR] for a run of one round."""
    rounds = []
    while os.path.isdir(os.path.join(out_dir, f"round{len(rounds) + 1}")):
        rounds.append(os.path.join(out_dir, f"round{len(rounds) + 1}"))
    return rounds or [out_dir]


def median_or_none(values):
    return statistics.median(values) if values else None


def libtorch_name(case):
    return case.replace("BM_", "BM_Libtorch_", 1)


def table(family, out_dir):
    dirs = round_dirs(out_dir)
    # runs[twin]: one (medians, context) per round that has this twin's file.
    runs = {}
    for twin, _ in TWINS:
        loaded = [load(os.path.join(d, f"{family}_vs_{twin}.json")) for d in dirs]
        runs[twin] = [run for run in loaded if run is not None]
    rounds = f", {len(dirs)} rounds" if len(dirs) > 1 else ""
    print(f"### {family}{rounds}\n")
    for twin, label in TWINS:
        if not runs[twin]:
            print(f"- libtorch {label}: not available (no {family}_vs_{twin}.json)")
            continue
        ctx = runs[twin][0][1]
        load_avg = " ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
        print(f"- {family}_vs_{twin}: libtorch {ctx.get('libtorch', '?')} "
              f"({ctx.get('libtorch_config', '?')}), {ctx.get('libtorch_library', '?')}; "
              f"load average at its start {load_avg or '?'}")
    print()
    cases = []
    for twin_runs in runs.values():
        for medians, _ in twin_runs:
            for name in medians:
                if not name.startswith("BM_Libtorch_") and name not in cases:
                    cases.append(name)
    header = ["case"]
    for _, label in TWINS:
        header += [f"ours ({label} run)", f"libtorch {label}", f"ours / libtorch {label}"]
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["------"] + ["-----:"] * (len(header) - 1)) + "|")
    drift = []
    for case in cases:
        row = [f"`{case}`"]
        ours_times = []
        for twin, _ in TWINS:
            if not runs[twin]:
                row += ["", "", "n/a"]
                continue
            ours = [m[case] for m, _ in runs[twin] if case in m]
            theirs = [m[libtorch_name(case)] for m, _ in runs[twin] if libtorch_name(case) in m]
            ratios = [m[case] / m[libtorch_name(case)] for m, _ in runs[twin]
                      if case in m and libtorch_name(case) in m]
            ours_times.append(median_or_none(ours))
            row += [fmt_time(median_or_none(ours)), fmt_time(median_or_none(theirs)),
                    fmt_ratio(ratios)]
        if len(ours_times) == 2 and None not in ours_times:
            gap = max(ours_times) / min(ours_times) - 1.0
            if gap > OURS_DRIFT:
                drift.append(f"{case} ({gap:.0%})")
        print("| " + " | ".join(row) + " |")
    print()
    if drift:
        print("Our own times differ between the two runs by more than "
              f"{OURS_DRIFT:.0%}: {', '.join(drift)}. The load probably changed between the "
              "runs; the ratios are still same-run, but rerun before quoting.\n")


def main():
    out_dir, families = sys.argv[1], sys.argv[2:]
    run_txt = os.path.join(out_dir, "run.txt")
    if os.path.exists(run_txt):
        with open(run_txt) as f:
            print("".join(f"    {line}" for line in f))
    for family in families:
        table(family, out_dir)


if __name__ == "__main__":
    main()
