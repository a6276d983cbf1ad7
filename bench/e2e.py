#!/usr/bin/env python3
"""make bench, end-to-end row: N agents x 8 fake GPUs run JOBS jobs of
`sleep 1` that were submitted over REST before the agents start. Prints the
submit rate, all-started and all-done from the agents' start (ideal: the
last wave starts at (waves-1) s and ends a second later), the start latency
on an idle cluster (submit -> running as the server recorded both, p50/p99
over LATENCY jobs submitted one at a time), and server and agent CPU per job
(utime+stime from /proc), and the agents' tasks' CPU per job (their reaped
children's, from fork to exit: the image listings' included), and the HTTP
requests the server served and the database's disk flushes (fdatasync) per
job while the agents ran them. Never fails on speed.
Usage: e2e.py TIDE_BIN [--agents N] [--jobs N] [--latency N] [--clients N]"""
import argparse
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cluster import BenchCluster, children_cpu_s, cpu_s, pct  # noqa: E402


def agent_starts(c):
    """{job_id: when its first attempt's task was started (epoch s)} from the
    agents' logs."""
    import calendar
    import re
    pat = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.(\d{3})Z .*job (\d+)\.(\d+): started pid")
    out = {}
    for name in c.procs:
        if not name.startswith("agent-"):
            continue
        with open(os.path.join(c.dir, name + ".log"), errors="replace") as f:
            for line in f:
                m = pat.match(line)
                if m:
                    t = calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S"))
                    out.setdefault(int(m.group(3)), t + int(m.group(2)) / 1000)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("tide")
    ap.add_argument("--agents", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--latency", type=int, default=100)
    ap.add_argument("--clients", type=int, default=4)
    args = ap.parse_args()
    with BenchCluster(args.tide, "tide-bench-e2e-") as c:
        c.start_server()
        call = c.call
        spec = {"command": ["sleep", "1"], "gpus": 1, "name": "e2e"}
        ids = []
        lock = threading.Lock()

        def submitter(n):
            for _ in range(n):
                j = call("POST", "/v1/jobs", spec)
                with lock:
                    ids.append(j["id"])
        t = time.monotonic()
        share = [args.jobs // args.clients + (i < args.jobs % args.clients) for i in range(args.clients)]
        threads = [threading.Thread(target=submitter, args=(n,)) for n in share]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        submit_s = time.monotonic() - t
        server_cpu0 = cpu_s(c.procs["server"].pid)

        def counter(text, name):
            return sum(float(line.split()[1]) for line in text.splitlines()
                       if line.startswith(name + " "))

        def requests_served(text):
            return counter(text, "tide_http_requests_total")
        metrics0 = call("GET", "/metrics", raw=True)
        requests0 = requests_served(metrics0)
        syncs0 = counter(metrics0, "tide_store_syncs_total")
        t0 = time.time()
        c.start_agents(args.agents, args.gpus)
        polls = 0
        final = {"succeeded", "failed", "cancelled", "timeout"}
        deadline = time.monotonic() + 600
        # Waits on /metrics' count of unfinished jobs (a few lines), not on
        # the job list: listing every job twice a second was about a tenth
        # of the server CPU this bench reported per job.
        while time.monotonic() < deadline:
            text = call("GET", "/metrics", raw=True, timeout=60)
            polls += 1
            if sum(float(line.split()[-1]) for line in text.splitlines()
                   if line.startswith("tide_jobs{")) == 0:
                break
            time.sleep(0.5)
        passes = {k: float(v) for k, v in (line.split()[:2] for line in text.splitlines()
                                             if line.startswith(("tide_scheduler_passes_total ",
                                                                 "tide_scheduler_pass_seconds_sum ")))}
        run_s = time.time() - t0
        # The agents' requests (registrations, heartbeats, answered waits)
        # from their start to the last job's end: the served count less
        # this script's own calls (start_agents' node listings every 0.2 s
        # are a few, counted in; the /metrics polls left out).
        requests = requests_served(text) - requests0 - polls
        syncs = counter(text, "tide_store_syncs_total") - syncs0
        agent_cpu = sum(cpu_s(pid) for pid in c.agent_pids())
        task_cpu = sum(children_cpu_s(pid) for pid in c.agent_pids())
        server_cpu = cpu_s(c.procs["server"].pid) - server_cpu0
        jobs = call("GET", f"/v1/jobs?limit={args.jobs + 10}")["jobs"]
        mine = [j for j in jobs if j["id"] in set(ids)]
        starts = [j["start_time"] for j in mine if j["start_time"]]
        ends = [j["end_time"] for j in mine if j["end_time"]]
        bad = [j for j in mine if j["state"] != "succeeded"]
        waves = -(-args.jobs // (args.agents * args.gpus))
        # Per GPU: how long it held each job (recorded running -> recorded
        # done, 1 s of sleep plus reporting) and sat idle between two.
        per_gpu = {}
        for j in mine:
            if j["start_time"] and j["end_time"] and j["gpus"]:
                per_gpu.setdefault((j["node"], j["gpus"][0]), []).append((j["start_time"], j["end_time"]))
        held, idle = [], []
        for runs in per_gpu.values():
            runs.sort()
            held += [(e - s) * 1000 for s, e in runs]
            idle += [(runs[i + 1][0] - runs[i][1]) * 1000 for i in range(len(runs) - 1)]
        # The idle gap in two: the previous job's end recorded -> the next
        # one placed (its job_starting event: the server's pass), and placed
        # -> running recorded (the wake, the agent's heartbeat that takes the
        # start, the exec and the heartbeat that reports it).
        placed = {e["job_id"]: e["time"] for e in
                  call("GET", f"/v1/events?kind=job_starting&limit={args.jobs * 2 + 100}",
                       timeout=60)["events"] if e["job_id"] in set(ids)}
        # ... and placed -> running recorded in two by the agents' logs
        # ("job J.A: started pid P", stamped to the ms): placed -> exec'd on
        # the node, then exec'd -> running recorded (the report's trip).
        started = agent_starts(c)
        to_start, to_record = [], []
        to_place, to_run, gpu_jobs = [], [], {}
        for j in mine:
            if j["start_time"] and j["end_time"] and j["gpus"]:
                gpu_jobs.setdefault((j["node"], j["gpus"][0]), []).append(j)
        for js in gpu_jobs.values():
            js.sort(key=lambda j: j["start_time"])
            for a, b in zip(js, js[1:]):
                if b["id"] in placed:
                    to_place.append((placed[b["id"]] - a["end_time"]) * 1000)
                    to_run.append((b["start_time"] - placed[b["id"]]) * 1000)
                    if b["id"] in started:
                        to_start.append((started[b["id"]] - placed[b["id"]]) * 1000)
                        to_record.append((b["start_time"] - started[b["id"]]) * 1000)

        # Start latency on an idle cluster: one job at a time.
        lat = []
        for _ in range(args.latency):
            j = call("POST", "/v1/jobs", {"command": ["true"], "gpus": 1, "name": "lat"})
            for _ in range(2000):
                got = call("GET", f"/v1/jobs/{j['id']}")
                if got["state"] in final:
                    break
                time.sleep(0.002)
            if got["start_time"] and got["submit_time"]:
                lat.append((got["start_time"] - got["submit_time"]) * 1000)

        print(f"  {args.agents} agents x {args.gpus} fake GPUs, {args.jobs} jobs of `sleep 1` "
              f"({waves} waves), submitted before the agents start")
        print(f"  submit: {args.jobs} over REST with {args.clients} clients in {submit_s:.2f} s "
              f"({args.jobs / submit_s:.0f} jobs/s)")
        print(f"  all started: {max(starts) - t0:.2f} s   all done: {max(ends) - t0:.2f} s "
              f"(ideal {waves - 1} s / {waves} s)   not succeeded: {len(bad)}")
        # Where the time beyond the ideal goes: before the first start (the
        # agents' own start and registration), and the waves' drift (each
        # GPU's n-th job starts later than (n-1) s after its first).
        firsts = [min(r)[0] for r in per_gpu.values()] if per_gpu else []
        if firsts:
            drift = [(sorted(r)[-1][0] - sorted(r)[0][0] - (len(r) - 1)) * 1000
                     for r in per_gpu.values() if len(r) > 1]
            print(f"  first start: {min(firsts) - t0:.2f} s after the agents' start (every GPU's "
                  f"first by {max(firsts) - t0:.2f} s); drift over a GPU's jobs beyond 1 s each: "
                  f"p50 {pct(drift, 50):.0f} ms, max {max(drift):.0f} ms")
        if passes:
            n = passes.get("tide_scheduler_passes_total", 0)
            took = passes.get("tide_scheduler_pass_seconds_sum", 0)
            print(f"  scheduling passes: {n:.0f} in {run_s:.1f} s ({n / run_s:.0f}/s), "
                  f"{took / max(n, 1) * 1000:.2f} ms each, {took / run_s * 100:.1f}% of a core")
        if held and idle:
            print(f"  per GPU: running -> done p50 {pct(held, 50):.0f} ms; idle between jobs "
                  f"p50 {pct(idle, 50):.0f} ms, p99 {pct(idle, 99):.0f} ms")
        if to_place:
            print(f"  idle between jobs, in two: done recorded -> next placed p50 "
                  f"{pct(to_place, 50):.0f} ms, p99 {pct(to_place, 99):.0f} ms; placed -> running "
                  f"recorded p50 {pct(to_run, 50):.0f} ms, p99 {pct(to_run, 99):.0f} ms")
        if to_start:
            print(f"  placed -> running, in two: placed -> started on the node (agent log) p50 "
                  f"{pct(to_start, 50):.0f} ms, p99 {pct(to_start, 99):.0f} ms; started -> running "
                  f"recorded p50 {pct(to_record, 50):.0f} ms, p99 {pct(to_record, 99):.0f} ms")
        if lat:
            print(f"  start latency on an idle cluster (submit -> running, {len(lat)} jobs): "
                  f"p50 {pct(lat, 50):.0f} ms, p99 {pct(lat, 99):.0f} ms")
        print(f"  HTTP requests per job: {requests / args.jobs:.2f} (the agents' registrations, "
              f"heartbeats and answered waits, and start_agents' few node listings)")
        print(f"  database disk flushes per job: {syncs / args.jobs:.2f} (fdatasync of its WAL; "
              f"commits that answers share count once)")
        print(f"  CPU per job: server {server_cpu / args.jobs * 1000:.2f} ms, "
              f"agents {agent_cpu / args.jobs * 1000:.2f} ms (all {args.agents}), their tasks "
              f"{task_cpu / args.jobs * 1000:.2f} ms (fork to exit: `sleep` and the image listings)")


if __name__ == "__main__":
    sys.exit(main())
