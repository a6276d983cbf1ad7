#!/usr/bin/env python3
"""Disk syncs per job: the server's fsync and fdatasync calls, counted by
`strace -f -c` (seccomp filtered, so only those calls stop it), in three
runs: CLIENTS=1 then 8 clients submitting JOBS jobs one per request with no
agents, and 8 clients submitting AGENT_JOBS `sleep 0.2` jobs that AGENTS
agents x 8 fake GPUs run to the end. Also prints the store's commits and
tide's own WAL flushes from /metrics (absent on servers older than them).
Never fails on speed. Usage: fsyncs.py TIDE_BIN [--jobs N] [--agents N]
[--agent-jobs N]"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import BenchCluster  # noqa: E402


def metric(c, name):
    m = re.search(rf"^{name} (\S+)", c.call("GET", "/metrics", raw=True), re.M)
    return float(m.group(1)) if m else 0.0


def unfinished(c):
    text = c.call("GET", "/metrics", raw=True)
    return sum(float(v) for v in re.findall(
        r'^tide_jobs\{state="(?:pending|starting|running)"[^}]*\} (\S+)', text, re.M))


def syncs(strace_out):
    """fsync + fdatasync calls in strace -c's table."""
    text = open(strace_out).read()
    total = 0
    for name in ("fsync", "fdatasync"):
        m = re.search(rf"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)(?:\s+\d+)?\s+{name}$", text, re.M)
        total += int(m.group(1)) if m else 0
    return total


def run(tide, label, clients, jobs, agents, command):
    with BenchCluster(tide, "tide-bench-fsyncs-") as c:
        out = os.path.join(c.dir, "strace.txt")
        log = open(os.path.join(c.dir, "server.log"), "ab")
        c.procs["server"] = subprocess.Popen(
            ["strace", "--seccomp-bpf", "-f", "-c", "-e", "trace=fdatasync,fsync", "-o", out,
             c.tide, "server", "--listen", f"127.0.0.1:{c.port}", "--data", c.data],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)
        log.close()
        token_file = os.path.join(c.data, "admin.token")
        while not os.path.exists(token_file):
            time.sleep(0.05)
        time.sleep(0.3)
        c.token = open(token_file).read().strip()
        if agents:
            c.start_agents(agents, 8)
        commits0, flushes0 = metric(c, "tide_store_commits_total"), metric(c, "tide_store_flushes_total")
        per = jobs // clients

        def client():
            for _ in range(per):
                c.call("POST", "/v1/jobs", {"command": command, "gpus": 1, "name": "fsyncs"})
        start = time.monotonic()
        threads = [threading.Thread(target=client) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        submit_s = time.monotonic() - start
        while agents and unfinished(c) > 0:
            time.sleep(0.2)
        commits = metric(c, "tide_store_commits_total") - commits0
        flushes = metric(c, "tide_store_flushes_total") - flushes0
        server = c.procs.pop("server")
        os.killpg(server.pid, signal.SIGTERM)  # strace and the server: its summary is written
        server.wait(60)
        n = per * clients
        calls = syncs(out)
        print(f"  {label}: {n} jobs (submitted in {submit_s:.1f} s): {calls} fsync+fdatasync, "
              f"{calls / n:.2f} a job; store commits {commits:.0f} ({commits / n:.2f} a job), "
              f"tide's WAL flushes {flushes:.0f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tide")
    ap.add_argument("--jobs", type=int, default=1600)
    ap.add_argument("--agents", type=int, default=4)
    ap.add_argument("--agent-jobs", type=int, default=320)
    args = ap.parse_args()
    if not shutil.which("strace"):
        print("  fsyncs: strace not installed; skipping")
        return
    run(args.tide, "1 client, no agents", 1, args.jobs // 4, 0, ["true"])
    run(args.tide, "8 clients, no agents", 8, args.jobs, 0, ["true"])
    run(args.tide, f"8 clients, {args.agents} agents x 8 GPUs, sleep 0.2", 8, args.agent_jobs,
        args.agents, ["sleep", "0.2"])


if __name__ == "__main__":
    main()
