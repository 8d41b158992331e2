"""Merges the twin runs of compare_benchmarks.sh into one markdown table per family.

    python3 tools/torch2/compare_benchmarks.py OUT_DIR FAMILY...

Reads OUT_DIR/<family>_vs_libtorch.json and <family>_vs_torch2.json (Google Benchmark JSON with
aggregates). A case BM_X (ours) pairs with BM_Libtorch_X in the same binary; the ratio is the
ratio of their medians (wall time), so below 1 ours is faster. Our own median is shown for
each twin's run: both binaries contain the same code for our cases, so a large gap between
the two means the machine's load changed between the runs.
"""

import json
import os
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


def fmt_ratio(ours, theirs):
    if ours is None or theirs is None:
        return ""
    r = ours / theirs
    text = f"{r:.2g}" if r < 0.1 else f"{r:.2f}"
    return f"**{text} (slower)**" if r > 1.0 else text


def libtorch_name(case):
    return case.replace("BM_", "BM_Libtorch_", 1)


def table(family, out_dir):
    runs = {twin: load(os.path.join(out_dir, f"{family}_vs_{twin}.json")) for twin, _ in TWINS}
    print(f"### {family}\n")
    for twin, label in TWINS:
        run = runs[twin]
        if run is None:
            print(f"- libtorch {label}: not available (no {family}_vs_{twin}.json)")
            continue
        ctx = run[1]
        load_avg = " ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
        print(f"- {family}_vs_{twin}: libtorch {ctx.get('libtorch', '?')} "
              f"({ctx.get('libtorch_config', '?')}), {ctx.get('libtorch_library', '?')}; "
              f"load average at its start {load_avg or '?'}")
    print()
    cases = []
    for run in runs.values():
        if run is None:
            continue
        for name in run[0]:
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
            run = runs[twin]
            if run is None:
                row += ["", "", "n/a"]
                continue
            ours = run[0].get(case)
            theirs = run[0].get(libtorch_name(case))
            ours_times.append(ours)
            row += [fmt_time(ours), fmt_time(theirs), fmt_ratio(ours, theirs)]
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
