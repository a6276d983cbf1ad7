"""The web dashboard's API calls under a deep queue: starts a server with no
agents (so every job waits), submits JOBS jobs (array jobs of 1000), then
times each GET the page makes per refresh, alone and while a client submits.
Prints numbers; never fails on speed.
Usage: TIDE_BIN=build/tide python3 bench/dashboard.py [JOBS] [ROUNDS]"""
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "e2e"))
from harness import Cluster  # noqa: E402

CALLS = ["/v1/jobs?limit=200", "/v1/jobs?limit=200&state=pending", "/v1/jobs?limit=500", "/v1/nodes", "/v1/pools",
         "/v1/projects", "/v1/usage", "/v1/queues", "/v1/events?tail=50"]


def timed(c, path):
    t = time.perf_counter()
    status, _ = c.request("GET", path)
    assert status == 200, (path, status)
    return (time.perf_counter() - t) * 1000


def summary(ms):
    ms = sorted(ms)
    return (f"median {statistics.median(ms):7.1f} ms  p90 {ms[int(0.9 * (len(ms) - 1))]:7.1f} ms"
            f"  max {ms[-1]:7.1f} ms")


def main():
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 10000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    with Cluster(agents=0) as c:
        t = time.perf_counter()
        left = jobs
        while left > 0:
            n = min(1000, left)
            c.api("POST", "/v1/jobs", {"command": ["true"], "gpus": 1, "name": "deep", "array": n},
                  expect=201)
            left -= n
        print(f"submitted {jobs} pending jobs in {time.perf_counter() - t:.1f} s")
        for path in CALLS:
            timed(c, path)  # warm
        print(f"each dashboard call, {rounds} rounds, {jobs} jobs waiting:")
        for path in CALLS:
            print(f"  GET {path:36s} {summary([timed(c, path) for _ in range(rounds)])}")
        page = []
        for _ in range(rounds):
            t = time.perf_counter()
            for path in CALLS[:1] + CALLS[3:]:
                timed(c, path)
            page.append((time.perf_counter() - t) * 1000)
        print(f"  one whole refresh (7 calls in a row, limit=200) {summary(page)}")

        # Submits while a dashboard refreshes as fast as it can: how much do its reads hold the lock?
        def submits():
            out = []
            for _ in range(rounds):
                s = time.perf_counter()
                c.api("POST", "/v1/jobs", {"command": ["true"], "gpus": 1}, expect=201)
                out.append((time.perf_counter() - s) * 1000)
            return out
        alone = submits()
        stop = threading.Event()

        def poll():
            while not stop.is_set():
                for path in CALLS:
                    timed(c, path)
        th = threading.Thread(target=poll)
        th.start()
        try:
            busy = submits()
        finally:
            stop.set()
            th.join()
        print(f"  POST /v1/jobs alone                        {summary(alone)}")
        print(f"  POST /v1/jobs while the dashboard polls    {summary(busy)}")


if __name__ == "__main__":
    main()
