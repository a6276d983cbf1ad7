#!/usr/bin/env python3
"""GET /v1/jobs with a big queue: a server holding JOBS pending jobs (no
agents: nothing runs; every one has live fields, its ETA and why it waits)
times a page of 1000, the whole list in one request and, where the server
pages (a "next" in the reply), the whole list page by page; then times
/healthz and GET /v1/jobs/1 (which takes the server's lock) alone and while
another client lists every job over and over. Prints numbers; never fails
on speed. Run it against an older binary for the "before".

usage: bench/jobs_list.py TIDE_BINARY [JOBS]
"""
import json
import os
import statistics
import sys
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from bench_cluster import BenchCluster, pct  # noqa: E402

tide = sys.argv[1]
jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 50000


def timed_get(c, path):
    req = urllib.request.Request(c.url + path, headers={"Authorization": f"Bearer {c.token}"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as r:
        body = r.read()
    return time.perf_counter() - t, body


def list_all_paged(c):
    cursor, n = None, 0
    while True:
        _, body = timed_get(c, "/v1/jobs?limit=1000" + (f"&cursor={cursor}" if cursor else ""))
        out = json.loads(body)
        n += len(out["jobs"])
        cursor = out.get("next")
        if not cursor:
            return n


def summary(times):
    ms = [t * 1000 for t in times]
    return (f"median {statistics.median(ms):8.1f} ms, p90 {pct(ms, 90):8.1f} ms,"
            f" max {max(ms):8.1f} ms ({len(ms)} calls)")


with BenchCluster(tide, "tide-bench-jobs-list-") as c:
    c.start_server()
    spec = {"command": ["true"], "gpus": 1, "array": 1000}
    t = time.perf_counter()
    for _ in range(jobs // 1000):
        c.call("POST", "/v1/jobs:batch", {"jobs": [spec]})
    print(f"== {jobs} pending jobs submitted in {time.perf_counter() - t:.1f} s ({tide})")
    time.sleep(2)  # let the scheduler's first passes over the queue settle
    pages = "next" in c.call("GET", "/v1/jobs?limit=1")

    times = [timed_get(c, "/v1/jobs?limit=1000")[0] for _ in range(15)]
    print(f"  GET /v1/jobs?limit=1000           {summary(times)}")
    times = []
    for _ in range(3):
        dt, body = timed_get(c, "/v1/jobs?limit=100000")
        times.append(dt)
    print(f"  GET /v1/jobs?limit=100000 ({len(json.loads(body)['jobs'])} jobs) {summary(times)}")
    if pages:
        t = time.perf_counter()
        n = list_all_paged(c)
        print(f"  all {n} jobs in pages of 1000 with cursor: {(time.perf_counter() - t) * 1000:.0f} ms")

    def probe(label, rounds=60):
        for path in ("/healthz", "/v1/jobs/1"):
            times = []
            for _ in range(rounds):
                times.append(timed_get(c, path)[0])
                time.sleep(0.02)
            print(f"  {path:12s} {label:36s} {summary(times)}")

    print("== does listing every job hold up /healthz and the lock?")
    probe("alone")
    for how, fn in (("limit=100000", lambda: timed_get(c, "/v1/jobs?limit=100000")),
                    ("pages of 1000", lambda: list_all_paged(c))):
        if how == "pages of 1000" and not pages:
            continue
        stop = threading.Event()

        def hammer():
            while not stop.is_set():
                fn()

        th = threading.Thread(target=hammer)
        th.start()
        time.sleep(0.5)
        probe(f"while listing all ({how})")
        stop.set()
        th.join()
