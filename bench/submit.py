#!/usr/bin/env python3
"""make bench, submit section: POST /v1/jobs one job per request from 1
and 8 keep-alive connections (wrk, SECONDS each), on an empty queue and
again once the batches have queued theirs; POST /v1/jobs:batch (BATCHES
requests of SIZE specs); arrays of ARRAY tasks through POST /v1/jobs
(ARRAYS of them); `tide --help` and sequential `tide submit` processes
(what a shell loop pays per job). Every row also says the server's CPU
per job: on a shared machine that is the steadier number. Never fails on
speed. --store URL runs the server on that database (a PostgreSQL URL, say
through tests/e2e/with_pg.py, which puts one in $TIDE_TEST_STORE_URL).
Usage: submit.py TIDE_BIN [--size N] [--batches N] [--array N] [--arrays N]
                 [--cli N] [--seconds S] [--store URL]"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import BenchCluster, cpu_s  # noqa: E402


def wrk_rows(c, server, seconds, label):
    """POST /v1/jobs from 1 and 8 connections for seconds each (wrk)."""
    if not shutil.which("wrk"):
        print("  POST /v1/jobs: wrk not installed; skipping")
        return
    script = os.path.join(c.dir, "post.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\n'
                'wrk.body = \'{"command":["true"],"gpus":1,"name":"bench"}\'\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                f'wrk.headers["Authorization"] = "Bearer {c.token}"\n')
    for conns in (1, 8):
        before = c.call("GET", "/metrics", raw=True)
        cpu0 = cpu_s(server.pid)
        out = subprocess.run(["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "-s", script,
                              c.url + "/v1/jobs"], capture_output=True, text=True).stdout
        cpu = cpu_s(server.pid) - cpu0
        rate = re.search(r"Requests/sec:\s*([\d.]+)", out)
        bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
        after = c.call("GET", "/metrics", raw=True)
        made = metric(after, "tide_jobs_submitted_total") - metric(before, "tide_jobs_submitted_total")
        passes = (metric(after, "tide_scheduler_pass_seconds_count") -
                  metric(before, "tide_scheduler_pass_seconds_count"))
        pass_s = (metric(after, "tide_scheduler_pass_seconds_sum") -
                  metric(before, "tide_scheduler_pass_seconds_sum"))
        print(f"  POST /v1/jobs, {conns} client{'s' if conns > 1 else ' '} {label}: "
              f"{float(rate.group(1)) if rate else 0:,.0f} jobs/s"
              f"{f' ({bad.group(1)} not 201!)' if bad else ''}; server CPU "
              f"{cpu / max(made, 1) * 1e6:.0f} us per job; {passes:.0f} passes of "
              f"{pass_s / max(passes, 1) * 1000:.1f} ms mean")


def floor_rows(c, seconds):
    """The 1-client row's ceiling on this machine: wrk -c1 against
    bench_flush_floor, which only reads a request, writes and flushes a
    commit's worth of WAL, and answers (and again without the flush)."""
    floor = os.path.join(os.path.dirname(os.path.abspath(c.tide)), "bench", "bench_flush_floor")
    if not shutil.which("wrk") or not os.path.exists(floor):
        print("  floor for 1 client: wrk or bench_flush_floor missing; skipping")
        return
    script = os.path.join(c.dir, "floor.lua")
    with open(script, "w") as f:
        f.write('wrk.method = "POST"\nwrk.body = \'{"command":["true"],"gpus":1,"name":"bench"}\'\n')
    rates = []
    for extra in ([], ["--no-flush"]):
        p = subprocess.Popen([floor, c.dir] + extra, stdout=subprocess.PIPE, text=True)
        try:
            first = p.stdout.readline().split()
            if len(first) != 2 or first[0] != "port":
                print("  floor for 1 client: bench_flush_floor did not start; skipping")
                return
            out = subprocess.run(["wrk", "-t1", "-c1", f"-d{seconds}s", "--latency", "-s", script,
                                  f"http://127.0.0.1:{first[1]}/"], capture_output=True,
                                 text=True).stdout
        finally:
            p.kill()
            p.wait()
        rate = re.search(r"Requests/sec:\s*([\d.]+)", out)
        p50 = re.search(r"50%\s+(\S+)", out)
        rates.append(f"{float(rate.group(1)) if rate else 0:,.0f}/s (p50 {p50.group(1) if p50 else '?'})")
    print(f"  floor for 1 client on this machine (bench/bench_flush_floor.c: read a request, "
          f"write and fdatasync 12 KB of WAL, answer): {rates[0]}; without the fdatasync: {rates[1]}")


def rates_ok(c):
    """Whether the server has POST /v1/jobs:batch."""
    try:
        c.call("POST", "/v1/jobs:batch", {"jobs": []})
    except urllib.error.HTTPError as e:
        return e.code == 400
    return True


def metric(metrics_text, name):
    m = re.search(r"^" + name + r" ([\d.e+-]+)", metrics_text, re.M)
    return float(m.group(1)) if m else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tide")
    ap.add_argument("--size", type=int, default=5000)
    ap.add_argument("--batches", type=int, default=4)
    ap.add_argument("--array", type=int, default=1000)
    ap.add_argument("--arrays", type=int, default=5)
    ap.add_argument("--cli", type=int, default=50)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--store", help="the server's --store (default: SQLite in its data dir)")
    args = ap.parse_args()
    with BenchCluster(args.tide, "tide-bench-submit-") as c:
        c.start_server(["--store", args.store] if args.store else [])
        tide, d, url, token, server = c.tide, c.dir, c.url, c.token, c.procs["server"]
        floor_rows(c, args.seconds)
        wrk_rows(c, server, args.seconds, "(queue empty)")

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
        rates = []
        cpu0 = cpu_s(server.pid)
        for i in range(args.batches if rates_ok(c) else 0):
            t = time.monotonic()
            out = c.call("POST", "/v1/jobs:batch", {"jobs": [spec] * args.size}, timeout=300,
                         headers={"Idempotency-Key": f"bench-{i}"})
            rates.append(args.size / (time.monotonic() - t))
            assert out["created"] == args.size, out
        if rates:
            cpu = cpu_s(server.pid) - cpu0
            print(f"  POST /v1/jobs:batch with an Idempotency-Key (as tide submit --file sends), "
                  f"{args.size} specs per request: {max(rates):,.0f} jobs/s best, "
                  f"{sorted(rates)[len(rates) // 2]:,.0f} median; server CPU "
                  f"{cpu / (args.size * len(rates)) * 1e6:.0f} us per job")
        queued = len(c.call("GET", "/v1/jobs?state=pending&limit=100000")["jobs"])
        wrk_rows(c, server, args.seconds, f"({queued:,} queued)")
        times, cpus = [], []
        for _ in range(args.arrays):
            cpu0 = cpu_s(server.pid)
            out, took = post("/v1/jobs", dict(spec, array=args.array))
            cpus.append(cpu_s(server.pid) - cpu0)
            times.append(took)
            assert len(out["jobs"]) == args.array, out
        print(f"  array of {args.array} tasks (one POST /v1/jobs), {args.arrays} of them: "
              f"{min(times) * 1000:.0f}-{max(times) * 1000:.0f} ms "
              f"({args.array / max(times):,.0f}-{args.array / min(times):,.0f} tasks/s); "
              f"server CPU {min(cpus) * 1000:.0f}-{max(cpus) * 1000:.0f} ms each")

        times, cpus = [], []
        for _ in range(args.arrays):
            cpu0 = cpu_s(server.pid)
            out, took = post("/v1/jobs:batch", {"jobs": [dict(spec, array=args.array)]})
            cpus.append(cpu_s(server.pid) - cpu0)
            times.append(took)
            assert len(out["jobs"][0].get("ids", [])) == args.array, out
        print(f"  array of {args.array} tasks as a batch of one (POST /v1/jobs:batch, what "
              f"tide submit --array sends), {args.arrays} of them: "
              f"{min(times) * 1000:.0f}-{max(times) * 1000:.0f} ms "
              f"({args.array / max(times):,.0f}-{args.array / min(times):,.0f} tasks/s); "
              f"server CPU {min(cpus) * 1000:.0f}-{max(cpus) * 1000:.0f} ms each")

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
