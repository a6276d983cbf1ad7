#!/usr/bin/env python3
"""The agent's NVML backend on a machine with NVIDIA GPUs: `make gpu-check`.
Not part of `make test` (CI has no GPU). Starts a server and one agent on the
real GPUs (no --fake-gpus) and checks, printing each result:
  1. the node registers with the GPUs nvidia-smi lists: count, UUIDs, names,
     total memory and driver version;
  2. heartbeats carry telemetry: temperature and power above 0;
  3. a CUDA job (PyTorch) on one GPU gets that GPU's UUID in
     CUDA_VISIBLE_DEVICES and sees exactly that device; while it holds
     HOLD_GIB and multiplies matrices, the node reports the memory used and
     a busy GPU; it succeeds;
  4. a share of one GPU (gpu_memory 4000 MiB) that takes 8 GiB is killed
     with reason `gpu memory over limit` (NVML's per-process memory), also
     when the process that takes it is in a session of its own (setsid);
  5. a job asking for more GPUs than the node has is refused at submit.
Exit 0 when every check passes, 1 when one fails, 77 when there is no NVIDIA
GPU (nvidia-smi missing or listing none). Standard library only.
Usage: nvml_check.py TIDE_BIN [--keep DIR] (DIR: where to copy the logs)"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HOLD_GIB = 20
FAILED = []


def check(ok, what, detail=""):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}{': ' + str(detail) if detail else ''}", flush=True)
    if not ok:
        FAILED.append(what)
    return ok


def smi_gpus():
    """[{index, uuid, name, memory_mib, driver}] from nvidia-smi, or None."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,name,memory.total,driver_version",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    gpus = []
    for line in out.strip().splitlines():
        f = [x.strip() for x in line.split(",")]
        if len(f) == 5:
            gpus.append({"index": int(f[0]), "uuid": f[1], "name": f[2], "memory_mib": int(f[3]),
                         "driver": f[4]})
    return gpus or None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, tide):
        self.tide = os.path.abspath(tide)
        self.dir = tempfile.mkdtemp(prefix="tide-gpu-check-")
        self.url = f"http://127.0.0.1:{free_port()}"
        self.data = os.path.join(self.dir, "data")
        self.procs = []
        self.token = None

    def spawn(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        self.procs.append(subprocess.Popen([self.tide] + argv, stdout=log, stderr=subprocess.STDOUT,
                                           stdin=subprocess.DEVNULL, start_new_session=True))
        log.close()

    def start(self):
        self.spawn("server", ["server", "--listen", self.url[len("http://"):], "--data", self.data,
                              "--heartbeat-ms", "500"])
        token = os.path.join(self.data, "admin.token")
        wait_for(lambda: os.path.exists(token), 20, "the server's admin token")
        time.sleep(0.3)
        self.token = open(token).read().strip()
        run_as = ["--job-user", "root", "--allow-root-jobs"] if os.geteuid() == 0 else []
        self.spawn("agent", ["agent", "--server", self.url, "--token-file",
                             os.path.join(self.data, "join.token"), "--name", "gpu-node", "--work",
                             os.path.join(self.dir, "agent")] + run_as)
        wait_for(lambda: [n for n in self.call("GET", "/v1/nodes")["nodes"] if n["state"] == "ready"],
                 60, "the agent to register")

    def call(self, method, path, body=None, raw=False):
        req = urllib.request.Request(self.url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        req.add_header("Authorization", f"Bearer {self.token}")
        if body is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
        return text if raw else json.loads(text)

    def node(self):
        return self.call("GET", "/v1/nodes")["nodes"][0]

    def close(self, keep):
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
                p.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                os.killpg(p.pid, signal.SIGKILL)
        if keep:
            os.makedirs(keep, exist_ok=True)
            for name in ("server.log", "agent.log"):
                shutil.copy(os.path.join(self.dir, name), os.path.join(keep, name))
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


FINAL = {"succeeded", "failed", "cancelled", "timeout"}


def wait_final(c, job_id, timeout):
    def ended():
        job = c.call("GET", f"/v1/jobs/{job_id}")
        return job if job["state"] in FINAL else None
    return wait_for(ended, timeout, f"job {job_id} to end")


# A CUDA program: what it was given and sees, then HOLD_GIB held on the GPU
# and bf16 matrix products for SECONDS.
CUDA_JOB = """
import os, sys, time, torch
print("visible", os.environ.get("CUDA_VISIBLE_DEVICES"))
print("count", torch.cuda.device_count())
print("uuid", torch.cuda.get_device_properties(0).uuid)
held = torch.empty(int(float(sys.argv[1]) * 2**30), dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < float(sys.argv[2]):
    b = a @ a
    torch.cuda.synchronize()
print("done", flush=True)
"""


def uuid_key(text):
    """A UUID as hex digits only, for comparing nvidia-smi's with PyTorch's."""
    t = text.lower().removeprefix("gpu-")
    return "".join(ch for ch in t if ch in "0123456789abcdef")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    keep = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
    smi = smi_gpus()
    if not smi:
        print("skipped: no NVIDIA GPU (nvidia-smi lists none)")
        return 77
    print(f"nvidia-smi: {len(smi)} GPU(s): {smi[0]['name']}, {smi[0]['memory_mib']} MiB, "
          f"driver {smi[0]['driver']}")
    c = Cluster(sys.argv[1])
    try:
        c.start()
        node = c.node()
        gpus = sorted(node["gpus"], key=lambda g: g["index"])
        print("1. registration")
        check(len(gpus) == len(smi), "every GPU found", f"{len(gpus)} of {len(smi)}")
        for g, s in zip(gpus, smi):
            check(g["uuid"] == s["uuid"], f"GPU {s['index']} UUID", g["uuid"])
            check(g["name"] == s["name"], f"GPU {s['index']} name", g["name"])
            check(abs(g["memory_total_mib"] - s["memory_mib"]) <= s["memory_mib"] // 100,
                  f"GPU {s['index']} memory", f"{g['memory_total_mib']} MiB")
        check(node["driver"] == "nvidia " + smi[0]["driver"], "driver", node["driver"])

        print("2. telemetry")
        time.sleep(1.2)
        g0 = c.node()["gpus"][0]
        check(g0["temperature_c"] > 0, "temperature", f"{g0['temperature_c']} C")
        check(g0["power_w"] > 0, "power", f"{g0['power_w']} W")
        metrics = c.call("GET", "/metrics", raw=True)
        check(any(line.startswith("tide_gpu_power_watts{") and float(line.split()[-1]) > 0
                  for line in metrics.splitlines()), "tide_gpu_power_watts in /metrics")

        print("3. a CUDA job")
        job = c.call("POST", "/v1/jobs", {"command": ["python3", "-c",
                                                      CUDA_JOB, str(HOLD_GIB), "8"],
                                          "gpus": 1, "name": "cuda"})
        peak_mem, peak_util = 0, 0
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            j = c.call("GET", f"/v1/jobs/{job['id']}")
            if j["state"] == "running":
                g = [x for x in c.node()["gpus"] if x["index"] == j["gpus"][0]][0]
                peak_mem = max(peak_mem, g["memory_used_mib"])
                peak_util = max(peak_util, g["utilization_pct"])
            elif j["state"] not in ("pending", "starting"):
                break
            time.sleep(0.25)
        j = wait_final(c, job["id"], 60)
        log = c.call("GET", f"/v1/jobs/{job['id']}/logs", raw=True)
        lines = dict(line.split(" ", 1) for line in log.splitlines() if " " in line)
        want = [s for s in smi if s["index"] == j["gpus"][0]][0]["uuid"]
        check(j["state"] == "succeeded", "it succeeds", f"{j['state']} ({j['reason']})")
        check(lines.get("visible") == want, "CUDA_VISIBLE_DEVICES is its GPU's UUID",
              lines.get("visible"))
        check(lines.get("count") == "1", "it sees one device", lines.get("count"))
        check(uuid_key(lines.get("uuid", "")) == uuid_key(want), "the device it sees is that GPU",
              lines.get("uuid"))
        check(peak_mem >= HOLD_GIB * 1024, "the node reported its memory",
              f"peak {peak_mem} MiB (holds {HOLD_GIB} GiB)")
        check(peak_util >= 50, "the node reported a busy GPU", f"peak {peak_util} %")
        if FAILED:
            print(log)

        print("4. a share over its gpu_memory")
        share = c.call("POST", "/v1/jobs", {"command": ["python3", "-c", CUDA_JOB, "8", "30"],
                                            "gpus": 1, "gpu_memory": 4000, "name": "share"})
        s = wait_final(c, share["id"], 90)
        check(s["state"] == "failed" and "gpu memory" in (s["reason"] or ""),
              "killed for its GPU memory", f"{s['state']} ({s['reason']})")
        escaped = c.call("POST", "/v1/jobs", {
            "command": ["sh", "-c", 'setsid python3 -c "$JOB" 8 30 & wait'],
            "env": {"JOB": CUDA_JOB}, "gpus": 1, "gpu_memory": 4000, "name": "share-setsid"})
        s = wait_final(c, escaped["id"], 90)
        check(s["state"] == "failed" and "gpu memory" in (s["reason"] or ""),
              "killed for its GPU memory taken outside its process group",
              f"{s['state']} ({s['reason']})")

        print("5. more GPUs than the node has")
        try:
            c.call("POST", "/v1/jobs", {"command": ["true"], "gpus": len(smi) + 1, "name": "big"})
            check(False, "refused at submit", "accepted")
        except urllib.error.HTTPError as e:
            body = e.read().decode()
            check(e.code == 400 and f"the largest has {len(smi)}" in body, "refused at submit", body)
    except Exception as e:  # a crash of the check is a failure, with its cause
        check(False, "the check ran to its end", repr(e))
    finally:
        c.close(keep)
    print("all passed" if not FAILED else f"{len(FAILED)} failed: {', '.join(FAILED)}")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
