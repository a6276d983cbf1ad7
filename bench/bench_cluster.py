"""
Shared by the end-to-end bench scripts: a real tide server (and agents) in
a temp dir on a free loopback port, its admin token, JSON calls, the CPU a
process has used (from /proc), and percentiles. Standard library only.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid):
    """CPU seconds (user + system) pid has used."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def children_cpu_s(pid):
    """CPU seconds (user + system) of the children pid has reaped: for an
    agent, its tasks from fork (or vfork) to exit."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / TICK


def pct(values, p):
    s = sorted(values)
    return s[min(len(s) - 1, int(round(p / 100 * (len(s) - 1))))]


class BenchCluster:
    """A server and its agents under one temp dir; a context manager that
    stops every process (whole groups) and removes the dir."""

    def __init__(self, tide, prefix):
        self.tide = os.path.abspath(tide)
        self.dir = tempfile.mkdtemp(prefix=prefix)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data = os.path.join(self.dir, "data")
        self.procs = {}
        self.token = None

    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        p = subprocess.Popen([self.tide] + argv, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True, env=env)
        log.close()
        self.procs[name] = p
        return p

    def start_server(self, extra=()):
        self.spawn("server", ["server", "--listen", f"127.0.0.1:{self.port}", "--data", self.data]
                   + list(extra))
        token_file = os.path.join(self.data, "admin.token")
        for _ in range(200):
            if os.path.exists(token_file):
                break
            time.sleep(0.05)
        time.sleep(0.3)
        self.token = open(token_file).read().strip()

    def start_agents(self, n, gpus, model="H200:141GB"):
        """n agents of gpus fake GPUs each; waits until all are ready. As
        root, jobs run as root, as the test harness's do: their directories
        are under this cluster's private (0700) temp dir."""
        run_as = ["--job-user", "root", "--allow-root-jobs"] if os.geteuid() == 0 else []
        for i in range(n):
            work = os.path.join(self.dir, f"agent-{i}")
            os.makedirs(work)
            self.spawn(f"agent-{i}", ["agent", "--server", self.url, "--token-file",
                                      os.path.join(self.data, "join.token"), "--name",
                                      f"node-{i:02d}", "--work", work, "--fake-gpus",
                                      f"{gpus}x{model}"] + run_as)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if sum(n["state"] == "ready" for n in self.call("GET", "/v1/nodes")["nodes"]) == n:
                return
            time.sleep(0.2)

    def call(self, method, path, body=None, raw=False, timeout=120, headers=None):
        """The JSON answer (the text when raw)."""
        req = urllib.request.Request(self.url + path, method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        req.add_header("Authorization", f"Bearer {self.token}")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read().decode()
        return text if raw else json.loads(text)

    def agent_pids(self):
        return [p.pid for name, p in self.procs.items() if name.startswith("agent-")]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in reversed(list(self.procs.values())):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except OSError:
                pass
        for p in self.procs.values():
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        if os.environ.get("TIDE_BENCH_KEEP"):
            print(f"  kept {self.dir} (TIDE_BENCH_KEEP)", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False
