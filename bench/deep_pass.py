#!/usr/bin/env python3
"""The server's scheduling pass over a deep queue that cannot start: one
agent whose GPUs are all held by running jobs, PENDING jobs waiting (1-GPU
array tasks), then the mean pass time from /metrics
(tide_scheduler_pass_seconds: sum and count over SECONDS) and the server's
CPU meanwhile. Reports; never fails on speed.
With --head-gpus G, one G-GPU job heads the queue (a bigger head leaves the
1-GPU jobs behind it to placement, each explained).
Usage: deep_pass.py TIDE_BIN [--pending N] [--seconds S] [--head-gpus G]"""
import argparse
import collections
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import BenchCluster, cpu_s  # noqa: E402


def pass_totals(c):
    """(sum of seconds, count) of the pass histogram, and passes run."""
    total = count = 0.0
    for ln in c.call("GET", "/metrics", raw=True).splitlines():
        if ln.startswith("tide_scheduler_pass_seconds_sum"):
            total = float(ln.rsplit(" ", 1)[1])
        elif ln.startswith("tide_scheduler_pass_seconds_count"):
            count = float(ln.rsplit(" ", 1)[1])
    return total, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tide")
    ap.add_argument("--pending", type=int, default=20000)
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--head-gpus", type=int, default=0,
                    help="first submit one job of this many GPUs (the head of the queue)")
    args = ap.parse_args()
    with BenchCluster(args.tide, "tide-bench-deep-") as c:
        c.start_server()
        c.start_agents(1, 2)
        c.call("POST", "/v1/jobs", {"name": "hold", "gpus": 2, "command": ["sleep", "3600"]})
        if args.head_gpus:
            c.call("POST", "/v1/jobs", {"name": "head", "gpus": args.head_gpus, "command": ["true"]})
        left = args.pending
        while left > 0:
            n = min(1000, left)
            c.call("POST", "/v1/jobs", {"name": "wait", "gpus": 1, "command": ["true"], "array": n})
            left -= n
        time.sleep(3)  # the submits' passes are over
        server = c.procs["server"]
        s0, n0 = pass_totals(c)
        cpu0 = cpu_s(server.pid)
        time.sleep(args.seconds)
        s1, n1 = pass_totals(c)
        cpu1 = cpu_s(server.pid)
        page = c.call("GET", "/v1/jobs?state=pending&limit=1000").get("jobs") or []
        reasons = collections.Counter(j.get("pending_reason") for j in page)
        passes = n1 - n0
        mean_ms = (s1 - s0) / passes * 1000 if passes else float("nan")
        print(f"{args.pending} pending: {int(passes)} passes in {args.seconds:.0f} s, "
              f"mean pass {mean_ms:.2f} ms, server CPU {(cpu1 - cpu0) / args.seconds * 100:.1f}%; "
              f"reasons of the first {len(page)}: {dict(reasons)}")


if __name__ == "__main__":
    main()
