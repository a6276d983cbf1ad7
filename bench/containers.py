#!/usr/bin/env python3
"""A containerised job's start overhead against a bare process: one agent
runs N jobs of `true` one after another, bare and in the busybox test image
(podman, the e2e suite's settings), and this prints the median time from
submission to the job's end as the server recorded it, and the same for the
runtime alone (`podman run --rm IMAGE true` against exec of true). Prints
numbers; never fails on speed. Needs podman and busybox-static.

usage: bench/containers.py TIDE_BINARY [N]
"""
import os
import statistics
import subprocess
import sys
import time

tide = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
os.environ["TIDE_BIN"] = os.path.abspath(tide)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import test_containers as tc  # noqa: E402
from harness import Cluster  # noqa: E402

if not tc.PODMAN or not tc.BUSYBOX:
    print("containers bench: needs podman and busybox-static; skipped")
    sys.exit(0)


def job_seconds(c, spec):
    out = []
    for _ in range(n):
        j = c.submit(gpus=1, **spec)
        f = c.wait_final([j["id"]], timeout=120)[j["id"]]
        assert f["state"] == "succeeded", f
        out.append(f["end_time"] - f["submit_time"])
    return out


def runtime_seconds(argv, env):
    out = []
    for _ in range(n):
        t0 = time.monotonic()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        out.append(time.monotonic() - t0)
    return out


tc.build_rootfs()
try:
    tc.give_image("bench")
    env = dict(os.environ, **tc.storage_env("bench"))
    with Cluster(agents=0, heartbeat_ms=100) as c:
        c.start_agent("bench", env=tc.storage_env("bench"))
        bare = job_seconds(c, {"command": ["true"]})
        boxed = job_seconds(c, {"command": ["true"], "image": tc.IMAGE})
    raw_bare = runtime_seconds(["true"], env)
    raw_boxed = runtime_seconds([tc.PODMAN, "run", "--rm", "--init", "--network=host",
                                 tc.IMAGE, "true"], env)
    med = statistics.median
    print(f"job `true`, submitted to ended (server times, heartbeat 100 ms), median of {n}:")
    print(f"  bare process      {med(bare) * 1000:8.0f} ms  (min {min(bare) * 1000:.0f})")
    print(f"  in a container    {med(boxed) * 1000:8.0f} ms  (min {min(boxed) * 1000:.0f})")
    print(f"  overhead          {(med(boxed) - med(bare)) * 1000:8.0f} ms")
    print(f"runtime alone, median of {n}: exec true {med(raw_bare) * 1000:.1f} ms, "
          f"podman run --rm {med(raw_boxed) * 1000:.0f} ms")
finally:
    tc.cleanup()
