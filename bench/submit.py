#!/usr/bin/env python3
"""make bench, submit section: the paths that are not one POST per job.
POST /v1/jobs:batch (BATCHES requests of SIZE specs), one array of ARRAY
tasks through POST /v1/jobs, `tide --help` and sequential `tide submit`
processes (what a shell loop pays per job). Never fails on speed.
--store URL runs the server on that database (a PostgreSQL URL, say through
tests/e2e/with_pg.py, which puts one in $TIDE_TEST_STORE_URL).
Usage: submit.py TIDE_BIN [--size N] [--batches N] [--array N] [--cli N] [--store URL]"""
import argparse
import os
import subprocess
import sys
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import BenchCluster, cpu_s  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tide")
    ap.add_argument("--size", type=int, default=5000)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--array", type=int, default=1000)
    ap.add_argument("--cli", type=int, default=50)
    ap.add_argument("--store", help="the server's --store (default: SQLite in its data dir)")
    args = ap.parse_args()
    with BenchCluster(args.tide, "tide-bench-submit-") as c:
        c.start_server(["--store", args.store] if args.store else [])
        tide, d, url, token, server = c.tide, c.dir, c.url, c.token, c.procs["server"]

        def post(path, body):
            t = time.monotonic()
            out = c.call("POST", path, body, timeout=300)
            return out, time.monotonic() - t

        spec = {"command": ["true"], "gpus": 1, "name": "bench"}
        rates = []
        cpu0 = cpu_s(server.pid)
        for _ in range(args.batches):
            try:
                out, took = post("/v1/jobs:batch", {"jobs": [spec] * args.size})
            except urllib.error.HTTPError as e:
                print(f"  POST /v1/jobs:batch: HTTP {e.code} (not on this server)")
                break
            assert out["created"] == args.size, out
            rates.append(args.size / took)
        if rates:
            cpu = cpu_s(server.pid) - cpu0
            print(f"  POST /v1/jobs:batch, {args.size} specs per request: "
                  f"{max(rates):,.0f} jobs/s best, {sorted(rates)[len(rates) // 2]:,.0f} median "
                  f"(request round trip, JSON both ways); server CPU "
                  f"{cpu / (args.size * len(rates)) * 1e6:.0f} us per job")
        cpu0 = cpu_s(server.pid)
        out, took = post("/v1/jobs", dict(spec, array=args.array))
        cpu = cpu_s(server.pid) - cpu0
        print(f"  array of {args.array} tasks (one POST /v1/jobs): {took * 1000:.0f} ms "
              f"({args.array / took:,.0f} tasks/s); server CPU {cpu * 1000:.0f} ms")

        env = dict(os.environ, TIDE_SERVER=url, TIDE_TOKEN=token)
        t = time.monotonic()
        for _ in range(20):
            subprocess.run([tide, "--help"], stdout=subprocess.DEVNULL, check=True)
        help_ms = (time.monotonic() - t) / 20 * 1000
        t = time.monotonic()
        for _ in range(args.cli):
            subprocess.run([tide, "submit", "--gpus", "1", "--", "true"], env=env,
                           stdout=subprocess.DEVNULL, check=True, cwd=d)
        cli_s = time.monotonic() - t
        print(f"  tide --help: {help_ms:.1f} ms; sequential tide submit: "
              f"{args.cli / cli_s:.0f} jobs/s ({cli_s / args.cli * 1000:.1f} ms each)")


if __name__ == "__main__":
    sys.exit(main())
