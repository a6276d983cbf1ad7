"""
End-to-end harness: starts a real `tide server` and real `tide agent`
processes with fake GPUs on free loopback ports in a temporary directory,
talks to the REST API with urllib, and tears everything down (whole process
groups) even when a test fails. Standard library only.

With TIDE_TEST_STORE=postgres each Cluster starts its own throwaway
PostgreSQL (pg_server.py) and gives the server `--store URL`; it is stopped
when the cluster closes. Otherwise the server keeps its SQLite file in DATA.
"""
import atexit
import contextlib
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

TIDE = os.environ.get("TIDE_BIN")
STORE = os.environ.get("TIDE_TEST_STORE", "sqlite")
_clusters = []



def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# After free_port: pg_server imports it from here.
if STORE == "postgres":
    import pg_server
    _why_not = pg_server.available()
    if _why_not:
        print(f"skipped: TIDE_TEST_STORE=postgres but PostgreSQL is not available: {_why_not}")
        sys.exit(77)


def wait_until(predicate, timeout=30.0, interval=0.1, what="condition"):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


class ApiError(Exception):
    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body}")
        self.status = status
        self.body = body


class Cluster:
    """A server plus agents under one temp dir. Use as a context manager."""

    def __init__(self, agents=2, fake_gpus="4xH200:141GB", node_timeout_ms=3000,
                 kill_grace_s=2, heartbeat_ms=300, keep=False, config=None, tls=None,
                 server_args=(), agent_listen=False, server_nofile=None):
        if not TIDE or not os.access(TIDE, os.X_OK):
            raise SystemExit("set TIDE_BIN to the tide binary")
        self.dir = tempfile.mkdtemp(prefix="tide-e2e-")
        self.port = free_port()
        # tls: PEM paths {"cert", "key", "ca"} and optionally "client_ca" (the
        # server then wants agent certificates) with "agent_cert", "agent_key".
        self.tls = tls
        self.ssl_context = None
        if tls:
            import ssl
            self.ssl_context = ssl.create_default_context(cafile=tls["ca"])
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.port}"
        # agent_listen: the server serves agents on a port of their own
        # (--agent-listen), where this cluster's agents connect.
        self.agent_port = free_port() if agent_listen else None
        self.agent_url = (f"{'https' if tls else 'http'}://127.0.0.1:{self.agent_port}"
                          if agent_listen else self.url)
        self.server_nofile = server_nofile  # the server's open-file limit, when given
        self.data = os.path.join(self.dir, "data")
        self.node_timeout_ms = node_timeout_ms
        self.kill_grace_s = kill_grace_s
        self.heartbeat_ms = heartbeat_ms
        self.server = None
        self.agents = {}
        self.keep = keep
        self.n_agents = agents
        self.server_args = list(server_args)  # more `tide server` flags
        self.fake_gpus = fake_gpus
        self.config = None
        self.pg = None  # the PgServer when STORE is postgres, started with the server
        if config is not None:
            self.config = os.path.join(self.dir, "tide.yaml")
            with open(self.config, "w") as f:
                f.write(config)
        _clusters.append(self)

    # ---- processes -------------------------------------------------
    def _spawn(self, name, args, env=None, nofile=None):
        log = open(os.path.join(self.dir, f"{name}.log"), "ab")

        def limit_files():
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        p = subprocess.Popen([TIDE] + args, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True,
                             env=dict(os.environ, **env) if env else None,
                             preexec_fn=limit_files if nofile else None)
        log.close()
        return p

    def store_args(self):
        """--store URL on PostgreSQL (its server started on first use), else nothing."""
        if STORE != "postgres":
            return []
        if self.pg is None:
            from pg_server import PgServer
            pg = PgServer()
            try:
                pg.start()
            except Exception:
                pg.stop()
                raise
            self.pg = pg
        return ["--store", self.pg.url]

    def start_server(self):
        self.server = self._spawn("server", [
            "server", "--listen", f"127.0.0.1:{self.port}", "--data", self.data]
            + self.store_args() + [
            "--node-timeout-ms", str(self.node_timeout_ms),
            "--heartbeat-ms", str(self.heartbeat_ms),
            "--kill-grace-s", str(self.kill_grace_s)]
            + (["--config", self.config] if self.config else [])
            + self._server_tls_args() + self.server_args
            + (["--agent-listen", f"127.0.0.1:{self.agent_port}"] if self.agent_port else []),
            nofile=self.server_nofile)
        wait_until(self._healthy, 20, what="server /healthz")
        self.admin = open(os.path.join(self.data, "admin.token")).read().strip()
        self.join = open(os.path.join(self.data, "join.token")).read().strip()

    def _server_tls_args(self):
        if not self.tls:
            return []
        args = ["--tls-cert", self.tls["cert"], "--tls-key", self.tls["key"]]
        if self.tls.get("client_ca"):
            args += ["--tls-client-ca", self.tls["client_ca"]]
        return args

    def _agent_tls_args(self):
        if not self.tls:
            return []
        args = ["--ca", self.tls["ca"]]
        if self.tls.get("agent_cert"):
            args += ["--tls-cert", self.tls["agent_cert"], "--tls-key", self.tls["agent_key"]]
        return args

    def _healthy(self):
        if self.server.poll() is not None:
            raise AssertionError("server exited early:\n" + self.log("server"))
        try:
            with urllib.request.urlopen(self.url + "/healthz", timeout=2,
                                        context=self.ssl_context) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError, OSError):
            return False

    def start_agent(self, name, fake_gpus=None, extra=(), run_as=None, env=None,
                    token_file=None, wait=True):
        """Starts agent name (extra flags in extra, extra environment in env)
        and waits until its node is ready. run_as: the agent's user flags; by
        default, as root, jobs run as root (they write into this cluster's
        private temp dir). token_file: its join token (default the shared
        DATA/join.token). wait=False: returns once it is started."""
        work = os.path.join(self.dir, "agents", name)
        os.makedirs(work, exist_ok=True)
        if run_as is None:
            run_as = ["--job-user", "root", "--allow-root-jobs"] if os.geteuid() == 0 else []
        self.agents[name] = self._spawn(f"agent-{name}", [
            "agent", "--server", self.agent_url,
            "--token-file", token_file or os.path.join(self.data, "join.token"),
            "--name", name, "--work", work, "--fake-gpus", fake_gpus or self.fake_gpus]
            + self._agent_tls_args() + list(extra) + run_as, env)
        if wait:
            wait_until(lambda: self.node(name) and self.node(name)["state"] == "ready", 20,
                       what=f"agent {name} registered")

    def restart_server_preloaded(self, lib, **env):
        """Stops the server and starts it again with the shared library lib
        preloaded (a fault injected into libc: tests/e2e/*.c) and env added
        to its environment; this process's own is left as it was."""
        self.kill_server()
        asan = os.environ.get("ASAN_OPTIONS")
        # a sanitizer's runtime wants to come first; these libraries do not mind
        with environment(env, LD_PRELOAD=lib,
                         ASAN_OPTIONS=(asan + ":" if asan else "") + "verify_asan_link_order=0"):
            self.start_server()

    def kill_server(self, sig=signal.SIGKILL):
        os.killpg(self.server.pid, sig)
        self.server.wait(15)

    def kill_agent(self, name, sig=signal.SIGKILL):
        p = self.agents.pop(name)
        os.killpg(p.pid, sig)
        p.wait(15)

    def __enter__(self):
        self.start_server()
        for i in range(self.n_agents):
            self.start_agent(f"node-{i + 1}")
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            sys.stderr.write(self.all_logs())
            self.close(remove=False)
            return False
        self.close(remove=False)
        reports = self.sanitizer_reports()
        if reports:
            raise AssertionError("sanitizer reports in process logs:\n" + reports)
        if not self.keep:
            shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def sanitizer_reports(self):
        """ASan/UBSan/LSan findings in any process log of this cluster."""
        markers = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
        found = []
        for f in sorted(os.listdir(self.dir)):
            if f.endswith(".log") and os.path.isfile(os.path.join(self.dir, f)):
                text = self.log(f[:-4])
                if any(m in text for m in markers):
                    found.append(f"----- {f} -----\n{text[-8000:]}")
        return "\n".join(found)

    def close(self, remove=True):
        procs = list(self.agents.values()) + ([self.server] if self.server else [])
        for p in procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10
        for p in procs:
            try:
                p.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait(5)
        self.agents = {}
        self.server = None
        if self.pg is not None:
            self.pg.stop()
            self.pg = None
        if remove:
            shutil.rmtree(self.dir, ignore_errors=True)

    def log(self, name):
        try:
            with open(os.path.join(self.dir, f"{name}.log"), errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def all_logs(self):
        out = []
        for f in sorted(os.listdir(self.dir)):
            if f.endswith(".log"):
                out.append(f"----- {f} -----\n{self.log(f[:-4])[-6000:]}")
        return "\n".join(out) + "\n"

    # ---- API -------------------------------------------------------
    def request(self, method, path, body=None, token=None, raw=None, headers=None):
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request(self.url + path, data=data, method=method)
        tok = self.admin if token is None else token
        if tok:
            req.add_header("Authorization", f"Bearer {tok}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=30, context=self.ssl_context) as r:
                text = r.read().decode()
                ctype = r.headers.get("Content-Type", "")
                return r.status, (json.loads(text) if "json" in ctype else text)
        except urllib.error.HTTPError as e:
            text = e.read().decode(errors="replace")
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text

    def api(self, method, path, body=None, token=None, expect=200):
        status, out = self.request(method, path, body, token)
        if status != expect:
            raise ApiError(status, out)
        return out

    def register_by_hand(self, name="hand", **fields):
        """Registers a node of one GPU with the join token, as an agent
        would (fields added to the body); returns its answer (node_id,
        node_token). The test then heartbeats for it."""
        body = dict({"name": name, "cpus": 8, "memory_mib": 1024,
                     "gpus": [{"index": 0, "name": "H200", "memory_total_mib": 1000}]}, **fields)
        status, out = self.request("POST", "/v1/agent/register", body, token=self.join)
        if status != 200:
            raise ApiError(status, out)
        return out

    def submit(self, token=None, **spec):
        return self.api("POST", "/v1/jobs", spec, token, expect=201)

    def job(self, job_id, token=None):
        return self.api("GET", f"/v1/jobs/{job_id}", token=token)

    def jobs(self, query=""):
        return self.api("GET", "/v1/jobs" + query)["jobs"]

    def logs(self, job_id):
        return self.api("GET", f"/v1/jobs/{job_id}/logs")

    def node(self, name):
        for n in self.api("GET", "/v1/nodes")["nodes"]:
            if n["name"] == name:
                return n
        return None

    def wait_final(self, job_ids, timeout=60):
        final = {"succeeded", "failed", "cancelled", "timeout"}
        ids = list(job_ids)

        def done():
            states = {i: self.job(i) for i in ids}
            return states if all(j["state"] in final for j in states.values()) else None
        return wait_until(done, timeout, 0.25, what=f"jobs {ids[:5]}... to finish")

    def wait_state(self, job_id, states, timeout=30):
        states = {states} if isinstance(states, str) else set(states)
        return wait_until(lambda: (j := self.job(job_id))["state"] in states and j, timeout, 0.1,
                          what=f"job {job_id} in {states}")

    def cli(self, *args, token=None, check=False, timeout=60, input=None):
        env = dict(os.environ, TIDE_SERVER=self.url, TIDE_TOKEN=token or self.admin)
        if self.tls:
            env["TIDE_CA"] = self.tls["ca"]
        p = subprocess.run([TIDE] + list(args), env=env, capture_output=True, text=True,
                           timeout=timeout, input=input, cwd=self.dir)
        if any(m in p.stderr for m in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")):
            raise AssertionError(f"sanitizer report from tide {' '.join(args)}:\n{p.stderr}")
        if check and p.returncode != 0:
            raise AssertionError(f"tide {' '.join(args)} exited {p.returncode}: {p.stderr}")
        return p


@contextlib.contextmanager
def environment(values=None, **more):
    """This process's environment (what it starts inherits) with values and
    more set for the block, as it was again after."""
    values = dict(values or {}, **more)
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def kill_exec_provider_agents(tmp):
    """Kills the agents the exec provider in tmp started (their .pid files)."""
    for f in os.listdir(tmp):
        if f.endswith(".pid"):
            try:
                os.kill(int(open(os.path.join(tmp, f)).read()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


def install_exec_provider(tmp):
    """Copies tests/e2e/exec_provider.sh into tmp (its files steer it, see the
    script) and returns its path; the agents it starts run TIDE."""
    prog = os.path.join(tmp, "provider.sh")
    shutil.copy(os.path.join(os.path.dirname(__file__), "exec_provider.sh"), prog)
    os.chmod(prog, 0o755)
    os.environ["TIDE_BIN"] = TIDE
    return prog


def _live_processes_whose(proc_file, item):
    """PIDs of live (not zombie) processes whose /proc/PID/proc_file, split
    at NULs, holds item (bytes)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/{proc_file}", "rb") as f:
                items = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ")[-1].startswith("Z"):
                    continue
        except OSError:
            continue
        if item in items:
            found.append(int(pid))
    return found


def processes_with_env(key, value):
    """PIDs of live processes whose environment has key=value."""
    return _live_processes_whose("environ", f"{key}={value}".encode())


def processes_with_arg(arg):
    """PIDs of live processes with arg among their command-line arguments."""
    return _live_processes_whose("cmdline", arg.encode())


def run_tests(tests):
    """Runs test functions in order; prints a summary line ctest can read."""
    passed = failed = 0
    for t in tests:
        start = time.monotonic()
        try:
            t()
            passed += 1
            print(f"PASS {t.__name__} ({time.monotonic() - start:.1f}s)", flush=True)
        except Exception:
            failed += 1
            import traceback
            print(f"FAIL {t.__name__}", flush=True)
            traceback.print_exc()
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


@atexit.register
def _cleanup():
    for c in _clusters:
        if c.server or c.agents or c.pg:
            c.close(remove=not c.keep)


def http_counters(c):
    """(tide_http_requests_total, tide_http_connections_total) of c's server now."""
    found = {}
    for line in c.api("GET", "/metrics").splitlines():
        name, _, value = line.partition(" ")
        if name in ("tide_http_requests_total", "tide_http_connections_total"):
            found[name] = float(value)
    return found["tide_http_requests_total"], found["tide_http_connections_total"]


def agent_traffic(c, before, requests_wanted):
    """(requests, connections) c's agents made since counters before, once
    they made requests_wanted requests; this function's own requests
    (urllib: one connection each, counted in both) are taken out."""
    own = 0
    last = None

    def enough():
        nonlocal own, last
        own += 1
        last = http_counters(c)
        return last[0] - before[0] - own >= requests_wanted
    wait_until(enough, 60, 0.5, what=f"{requests_wanted} requests from the agents")
    return last[0] - before[0] - own, last[1] - before[1] - own


def check_agent_keeps_connections(c, node="node-1"):
    """Asserts that c's one agent keeps its connections: requests (heartbeats,
    long polls, a job's reports) on a few connections, and again after the
    server is killed and restarted (the dead ones dropped, new ones kept)."""
    for phase in ("before", "after"):
        job = c.submit(gpus=1, command=["sh", "-c", "sleep 1"])
        requests, conns = agent_traffic(c, http_counters(c), 20)
        assert c.wait_final([job["id"]])[job["id"]]["state"] == "succeeded"
        # one per agent thread (loop, long poll); a few more only if the
        # machine stalls the agent past the 5 s a connection is kept idle
        assert conns <= 4, \
            f"{phase} a server restart: {conns} connections for {requests} agent requests"
        if phase == "before":
            c.kill_server(signal.SIGKILL)
            c.start_server()
            wait_until(lambda: (c.node(node) or {}).get("state") == "ready", 30,
                       what=f"{node} ready again")
