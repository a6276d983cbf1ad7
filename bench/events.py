#!/usr/bin/env python3
"""GET /v1/events under load: a server with a 10k-job pending queue and
10k finished jobs' worth of events (submitted, starting, running, ended:
40k rows, written into its database before it starts) times each listing,
and times GET /v1/jobs/1 (which takes the server's lock, as the scheduler
does) while other clients list every event over and over. Prints numbers;
never fails on speed.

usage: bench/events.py TIDE_BINARY [JOBS]
"""
import json
import os
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

tide = sys.argv[1]
jobs = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
tmp = tempfile.mkdtemp(prefix="tide-bench-events-")
data = os.path.join(tmp, "data")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


port = free_port()
url = f"http://127.0.0.1:{port}"


def start():
    log = open(os.path.join(tmp, "server.log"), "ab")
    p = subprocess.Popen([tide, "server", "--listen", f"127.0.0.1:{port}", "--data", data],
                         stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(200):
        try:
            urllib.request.urlopen(url + "/healthz", timeout=1)
            return p
        except OSError:
            time.sleep(0.05)
    raise SystemExit("server did not start")


def stop(p):
    os.killpg(p.pid, signal.SIGTERM)
    p.wait(20)


def get(path, token):
    req = urllib.request.Request(url + path, headers={"Authorization": f"Bearer {token}"})
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as r:
        body = r.read()
    return time.perf_counter() - t, body


# First start makes the database; then the history goes in while it is down.
stop(start())
db = sqlite3.connect(os.path.join(data, "tide.db"))
cols = {r[1] for r in db.execute("PRAGMA table_info(events)")}
rows = []
t0 = 1_764_000_000_000
for j in range(jobs):
    node, project = f"node-{j % 50}", f"p{j % 5}"
    end = "job_failed" if j % 10 == 0 else "job_succeeded"
    for k, (kind, msg) in enumerate((("job_submitted", "submitted"),
                                     ("job_starting", f"placed on {node} GPUs 0 (attempt 1)"),
                                     ("job_running", f"running on {node} (attempt 1)"),
                                     (end, "exit 1" if end == "job_failed" else "exit 0"))):
        rows.append((t0 + j * 1000 + k, kind, 1_000_000 + j, None, msg,
                     None if k == 0 else node, project))
if "project" in cols:
    db.executemany("INSERT INTO events(time_ms, kind, job_id, node_id, message, node, project)"
                   " VALUES(?,?,?,?,?,?,?)", rows)
else:  # an older server's table
    db.executemany("INSERT INTO events(time_ms, kind, job_id, node_id, message)"
                   " VALUES(?,?,?,?,?)", [r[:5] for r in rows])
db.commit()
db.close()

server = start()
try:
    token = open(os.path.join(data, "admin.token")).read().strip()
    # A pending queue of `jobs` jobs (no agents: nothing runs), in arrays of 1000.
    body = json.dumps({"command": ["true"], "gpus": 1, "array": 1000}).encode()
    queued = time.perf_counter()
    for _ in range(jobs // 1000):
        req = urllib.request.Request(url + "/v1/jobs", data=body, method="POST",
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
        urllib.request.urlopen(req, timeout=120).read()
    queued = time.perf_counter() - queued
    n_events = len(rows) + jobs
    print(f"== {jobs} jobs submitted in arrays of 1000 in {queued:.2f} s (a job_submitted event each)")
    print(f"== GET /v1/events: {n_events} events, {jobs} jobs pending ({tide})")
    queries = ["", "?tail=100", f"?job={1_000_000 + jobs // 2}", "?node=node-7&tail=100",
               "?project=p0&kind=job_failed&tail=100", "?kind=job_failed", "?limit=100000"]
    for q in queries:
        times = []
        for _ in range(7):
            dt, out = get("/v1/events" + q, token)
            times.append(dt)
        n = len(json.loads(out)["events"])
        print(f"  {q or '(default: oldest 1000)':40s} {n:6d} events  median {statistics.median(times) * 1000:8.1f} ms")

    def probe(label, rounds=40):
        times = []
        for _ in range(rounds):
            dt, _ = get("/v1/jobs/1", token)
            times.append(dt)
            time.sleep(0.01)
        times.sort()
        print(f"  GET /v1/jobs/1 (takes the lock) {label:34s} median {statistics.median(times) * 1000:7.1f} ms,"
              f" max {times[-1] * 1000:7.1f} ms")

    print("== does listing hold up the server's lock?")
    probe("alone")
    stop_flag = threading.Event()

    def hammer():
        while not stop_flag.is_set():
            get("/v1/events?limit=100000", token)

    threads = [threading.Thread(target=hammer) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    probe("while 2 clients list every event")
    stop_flag.set()
    for t in threads:
        t.join()
finally:
    stop(server)
    import shutil
    shutil.rmtree(tmp, ignore_errors=True)
