#!/usr/bin/env python3
"""make bench, /metrics section: how long GET /metrics takes with a long queue.

Starts a real server and AGENTS agents with GPUS fake GPUs each (16 x 8 = 128),
fills every GPU with a running job, queues PENDING more (10,000) behind them,
then times SCRAPES sequential GET /metrics requests and, while a scraper runs
flat out, GET /healthz (which takes the server lock too) to show what the
scrapes cost everybody else. Prints numbers and the scheduler pass histogram's
mean; never fails on speed. Usage: metrics.py TIDE_BIN [--pending N]
[--agents N] [--scrapes N]."""
import argparse
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import BenchCluster  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tide")
    ap.add_argument("--pending", type=int, default=10000)
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--scrapes", type=int, default=50)
    args = ap.parse_args()
    with BenchCluster(args.tide, "tide-bench-metrics-") as c:
        c.start_server()

        def call(method, path, body=None):
            return c.call(method, path, body, raw=True)

        c.start_agents(args.agents, args.gpus)
        total_gpus = args.agents * args.gpus
        for i in range(total_gpus):
            call("POST", "/v1/jobs", {"name": f"run-{i}", "gpus": 1, "command": ["sleep", "3600"]})
        left = args.pending
        t0 = time.monotonic()
        while left > 0:
            n = min(1000, left)
            spec = {"name": "wait", "gpus": 1, "command": ["true"]}
            if n > 1:
                spec["array"] = n
            call("POST", "/v1/jobs", spec)
            left -= n
        submit_s = time.monotonic() - t0
        time.sleep(3)

        text = call("GET", "/metrics")
        times = []
        for _ in range(args.scrapes):
            t = time.monotonic()
            text = call("GET", "/metrics")
            times.append(time.monotonic() - t)
        lines = {ln.rsplit(" ", 1)[0]: float(ln.rsplit(" ", 1)[1])
                 for ln in text.splitlines() if ln and not ln.startswith("#")}
        pending = lines.get('tide_jobs{state="pending",queue="default"}', -1)
        running = sum(v for k, v in lines.items() if k.startswith('tide_jobs{state="running"'))

        # /healthz (no lock) vs GET /v1/queues (takes the lock) with and without a scraper running.
        def timed(path, n=200):
            out = []
            for _ in range(n):
                t = time.monotonic()
                call("GET", path)
                out.append(time.monotonic() - t)
            return out
        quiet = timed("/v1/queues")
        stop = threading.Event()

        def scraper():
            while not stop.is_set():
                call("GET", "/metrics")
        th = threading.Thread(target=scraper)
        th.start()
        busy = timed("/v1/queues")
        stop.set()
        th.join()
        snaps = lines.get("tide_metrics_snapshot_seconds_count", 0)
        snap_mean = lines.get("tide_metrics_snapshot_seconds_sum", 0) / snaps if snaps else None
        passes = lines.get("tide_scheduler_pass_seconds_count", 0)
        pass_mean = lines.get("tide_scheduler_pass_seconds_sum", 0) / passes if passes else 0

        def ms(v):
            return f"{v * 1000:.1f} ms"
        q = statistics.quantiles(times, n=20)
        print(f"cluster: {args.agents} agents x {args.gpus} fake GPUs = {total_gpus} GPUs; "
              f"{running:.0f} running, {pending:.0f} pending (submitted {args.pending} in {submit_s:.1f} s)")
        print(f"GET /metrics ({len(text)} bytes, {len(lines)} series), {args.scrapes} scrapes: "
              f"median {ms(statistics.median(times))}, p95 {ms(q[18])}, max {ms(max(times))}")
        if snap_mean is not None:
            print(f"server lock held per scrape (tide_metrics_snapshot_seconds): mean {snap_mean * 1e6:.0f} us "
                  f"over {snaps:.0f} scrapes")
        print(f"GET /v1/queues (takes the server lock): median {ms(statistics.median(quiet))} alone, "
              f"{ms(statistics.median(busy))} with a scraper running flat out "
              f"(p95 {ms(statistics.quantiles(quiet, n=20)[18])} / {ms(statistics.quantiles(busy, n=20)[18])})")
        print(f"scheduling pass: mean {ms(pass_mean)} over {passes:.0f} passes")


if __name__ == "__main__":
    sys.exit(main())
