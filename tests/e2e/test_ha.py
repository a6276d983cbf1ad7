"""End to end: high availability (docs/ha.md). Two `tide server`s on one
throwaway PostgreSQL, fake-GPU agents given both URLs, a submitter that
follows the leader. The leader is killed (-9) at random moments, several
times; every acknowledged job must exist and run exactly once, on one node.
Also: a follower's 503, a leader whose database session is cut stopping at
once, and a pool node whose create was in flight at the failover adopted,
not created twice. Exits 77 (skipped) where PostgreSQL is not installed."""
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(__file__))
import pg_server  # noqa: E402
from harness import TIDE, free_port, install_exec_provider, run_tests, wait_until  # noqa: E402

if pg_server.available():
    print(f"SKIP: PostgreSQL is not available: {pg_server.available()}")
    sys.exit(77)
if not TIDE or not os.access(TIDE, os.X_OK):
    raise SystemExit("set TIDE_BIN to the tide binary")

ROOT = os.geteuid() == 0
_live = []  # HA clusters to tear down at exit


def http(method, url, body=None, token=None, headers=None, timeout=5):
    """(status, parsed body or text, headers); status 0 when nothing answered."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw, status, hdrs = r.read(), r.status, r.headers
    except urllib.error.HTTPError as e:
        raw, status, hdrs = e.read(), e.code, e.headers
    except (urllib.error.URLError, ConnectionError, OSError):
        return 0, None, {}
    try:
        return status, json.loads(raw), hdrs
    except ValueError:
        return status, raw.decode(errors="replace"), hdrs


class HA:
    """n servers on one PostgreSQL plus agents that know every server."""

    def __init__(self, pg, servers=2, node_timeout_ms=10000, heartbeat_ms=300, config=None):
        self.pg = pg
        self.dir = tempfile.mkdtemp(prefix="tide-ha-")
        os.chmod(self.dir, 0o755)
        self.ports = [free_port() for _ in range(servers)]
        self.urls = [f"http://127.0.0.1:{p}" for p in self.ports]
        self.procs = [None] * servers
        self.store_urls = [pg.url] * servers  # a test may route one server another way
        self.agents = {}
        self.node_timeout_ms = node_timeout_ms
        self.heartbeat_ms = heartbeat_ms
        self.config = None
        if config:
            self.config = os.path.join(self.dir, "tide.yaml")
            with open(self.config, "w") as f:
                f.write(config)
        self.admin = None
        _live.append(self)

    def data(self, i):
        return os.path.join(self.dir, f"data-{i}")

    def spawn(self, name, args):
        log = open(os.path.join(self.dir, f"{name}.log"), "ab")
        p = subprocess.Popen([TIDE] + args, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        return p

    def start_server(self, i):
        self.procs[i] = self.spawn(f"server-{i}", [
            "server", "--listen", f"127.0.0.1:{self.ports[i]}", "--data", self.data(i),
            "--store", self.store_urls[i], "--advertise-url", self.urls[i],
            "--agent-servers", ",".join(self.urls),
            "--node-timeout-ms", str(self.node_timeout_ms),
            "--heartbeat-ms", str(self.heartbeat_ms), "--kill-grace-s", "2"]
            + (["--config", self.config] if self.config else []))
        wait_until(lambda: self.health(i) is not None, 30, 0.05, what=f"server {i} /healthz")

    def health(self, i):
        if self.procs[i] is None:
            return None
        if self.procs[i].poll() is not None:
            return None
        status, body, _ = http("GET", self.urls[i] + "/healthz", timeout=2)
        return body if status == 200 and isinstance(body, dict) else None

    def leader(self):
        """Index of the server that answers as leader, or None."""
        for i in range(len(self.urls)):
            h = self.health(i)
            if h and h.get("role") == "leader":
                return i
        return None

    def tokens(self, i):
        with open(os.path.join(self.data(i), "admin.token")) as f:
            self.admin = f.read().strip()

    def start_agent(self, name, data_of):
        work = os.path.join(self.dir, "agents", name)
        os.makedirs(work, exist_ok=True)
        run_as = ["--job-user", "root", "--allow-root-jobs"] if ROOT else []
        self.agents[name] = self.spawn(f"agent-{name}", [
            "agent", "--server", ",".join(self.urls), "--token-file",
            os.path.join(self.data(data_of), "join.token"), "--name", name, "--work", work,
            "--fake-gpus", "4xH200:141GB"] + run_as)

    def api(self, method, path, body=None, expect=200, headers=None):
        """A request to whichever server leads (waiting for one)."""
        deadline = time.monotonic() + 30
        while True:
            i = self.leader()
            if i is not None:
                status, out, _ = http(method, self.urls[i] + path, body, self.admin, headers)
                if status == expect:
                    return out
                if status not in (0, 503):
                    raise AssertionError(f"{method} {path}: HTTP {status}: {out}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{method} {path}: no leader answered")
            time.sleep(0.05)

    def kill_server(self, i, sig=signal.SIGKILL):
        os.kill(self.procs[i].pid, sig)  # the server alone, as a crash would
        self.procs[i].wait(30)

    def log(self, name):
        try:
            with open(os.path.join(self.dir, f"{name}.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def logs(self):
        out = []
        for f in sorted(os.listdir(self.dir)):
            if f.endswith(".log"):
                out.append(f"===== {f}\n{self.log(f[:-4])[-6000:]}")
        return "\n".join(out)

    def sanitizer_reports(self):
        """ASan/UBSan/LSan findings in any process log."""
        markers = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:")
        return "\n".join(f"----- {f} -----\n{self.log(f[:-4])[-8000:]}"
                         for f in sorted(os.listdir(self.dir)) if f.endswith(".log")
                         and any(m in self.log(f[:-4]) for m in markers))

    def close(self):
        """Agents, then servers: SIGTERM (so sanitizers report), SIGKILL after 15 s."""
        for group in (list(self.agents.values()), [p for p in self.procs if p]):
            for p in group:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except (ProcessLookupError, PermissionError):
                    pass
            for p in group:
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait(15)
        self.agents = {}
        self.procs = [None] * len(self.procs)
        if self in _live:
            _live.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            sys.stderr.write(self.logs())
        self.close()
        if exc_type is None:
            reports = self.sanitizer_reports()
            if reports:
                raise AssertionError("sanitizer reports in process logs:\n" + reports)
            shutil.rmtree(self.dir, ignore_errors=True)
        return False


def start_pair(ha, agents=2):
    """Server 0 leads (it starts first), the others follow; agents join."""
    ha.start_server(0)
    assert ha.health(0)["role"] == "leader", ha.health(0)
    ha.tokens(0)
    for i in range(1, len(ha.urls)):
        ha.start_server(i)
        wait_until(lambda: (ha.health(i) or {}).get("role") == "follower", 20, 0.05,
                   what=f"server {i} following")
    for k in range(agents):
        ha.start_agent(f"node-{k + 1}", 0)
    if agents:
        wait_until(lambda: sum(n["state"] == "ready"
                               for n in ha.api("GET", "/v1/nodes")["nodes"]) == agents,
                   30, 0.1, what="agents ready")


def test_a_follower_answers_503_with_the_leader():
    with pg_server.PgServer() as pg, HA(pg) as ha:
        start_pair(ha, agents=0)
        h0, h1 = ha.health(0), ha.health(1)
        assert h0["role"] == "leader" and h0["leader"] == ha.urls[0], h0
        assert h1["role"] == "follower" and h1["leader"] == ha.urls[0], h1
        assert h1["epoch"] == h0["epoch"] >= 1, (h0, h1)
        for method, path, body in (("GET", "/v1/jobs", None), ("GET", "/v1/nodes", None),
                                   ("POST", "/v1/jobs", {"command": ["true"]}),
                                   ("POST", "/v1/agent/heartbeat", {})):
            status, out, hdrs = http(method, ha.urls[1] + path, body, ha.admin)
            assert status == 503, (method, path, status, out)
            assert out == {"error": "not the leader", "leader": ha.urls[0]}, out
            assert hdrs.get("X-Tide-Leader") == ha.urls[0], dict(hdrs)
        # without a token too: the follower looks at no token
        status, out, _ = http("GET", ha.urls[1] + "/v1/jobs")
        assert status == 503 and out["leader"] == ha.urls[0], (status, out)
        # the leader serves
        status, out, hdrs = http("GET", ha.urls[0] + "/v1/nodes", token=ha.admin)
        assert status == 200 and "X-Tide-Leader" not in hdrs, (status, out)
        # and the follower takes over when the leader goes, with the next epoch
        ha.kill_server(0)
        wait_until(lambda: (ha.health(1) or {}).get("role") == "leader", 20, 0.02,
                   what="server 1 leading")
        assert ha.health(1)["epoch"] == h0["epoch"] + 1, ha.health(1)
        ha.start_server(0)
        wait_until(lambda: (ha.health(0) or {}).get("role") == "follower", 20, 0.05,
                   what="server 0 following")
        status, out, hdrs = http("GET", ha.urls[0] + "/v1/jobs", token=ha.admin)
        assert status == 503 and out["leader"] == ha.urls[1], (status, out)


def test_a_leader_whose_database_session_is_cut_stops_at_once():
    with pg_server.PgServer() as pg, HA(pg) as ha:
        start_pair(ha, agents=1)
        pids = pg.psql("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted").split()
        assert len(pids) == 1, pids  # the leader's write session holds the lock
        # Every other session first (the follower's among them): a follower
        # reconnects at its next try and can still take over.
        pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'tide'"
                f" AND pid <> pg_backend_pid() AND pid <> {pids[0]}")
        time.sleep(1)
        assert (ha.health(1) or {}).get("role") == "follower", ha.log("server-1")
        assert ha.procs[0].poll() is None, ha.log("server-0")
        cut = time.monotonic()
        pg.psql(f"SELECT pg_terminate_backend({pids[0]})")
        rc = ha.procs[0].wait(10)
        stopped = time.monotonic() - cut
        assert rc == 3, (rc, ha.log("server-0"))
        assert "lost the store connection" in ha.log("server-0"), ha.log("server-0")
        wait_until(lambda: (ha.health(1) or {}).get("role") == "leader", 20, 0.02,
                   what="server 1 leading")
        took = time.monotonic() - cut
        print(f"session cut: the leader stopped after {stopped:.2f}s, "
              f"server 1 led after {took:.2f}s", flush=True)
        # the agent follows: its node stays ready under the new leader
        wait_until(lambda: ha.api("GET", "/v1/nodes")["nodes"][0]["state"] == "ready", 20, 0.1,
                   what="node ready under the new leader")
        job = ha.api("POST", "/v1/jobs", {"command": ["true"], "gpus": 1}, expect=201)
        wait_until(lambda: ha.api("GET", f"/v1/jobs/{job['id']}")["state"] == "succeeded",
                   30, 0.1, what="a job on the new leader")


def test_a_leader_cut_off_from_the_database_gives_way_in_seconds():
    # A host that vanishes (power, a cut cable) sends no reset. On Linux's
    # TCP defaults its session, and the leader lock with it, lived for
    # 2 h 11 min, while every agent fenced its jobs. Keepalives on both
    # ends now end it within seconds: the follower leads and the job runs on.
    if os.geteuid() != 0 or not shutil.which("iptables"):
        print("  (skipped: cutting one connection needs root and iptables)")
        return
    with pg_server.PgServer() as pg, HA(pg, node_timeout_ms=30000) as ha:
        ha.store_urls[0] = pg.url.replace("@127.0.0.1:", "@127.0.0.2:")
        start_pair(ha, agents=1)
        job = ha.api("POST", "/v1/jobs", {"command": ["sleep", "90"], "gpus": 1}, expect=201)
        wait_until(lambda: ha.api("GET", f"/v1/jobs/{job['id']}")["state"] == "running", 30, 0.1,
                   what="the job running")
        # both ways of server 0's database connection go nowhere, silently
        rules = [["INPUT", "-p", "tcp", "-d", "127.0.0.2", "-j", "DROP"],
                 ["INPUT", "-p", "tcp", "-s", "127.0.0.2", "-j", "DROP"]]
        try:
            for r in rules:
                subprocess.run(["iptables", "-I"] + r, check=True)
            cut = time.monotonic()
            wait_until(lambda: (ha.health(1) or {}).get("role") == "leader", 60, 0.1,
                       what="server 1 leading")
            took = time.monotonic() - cut
        finally:
            for r in rules:
                subprocess.run(["iptables", "-D"] + r, check=False)
        print(f"cut off: server 1 led after {took:.1f}s", flush=True)
        assert took < 30, took
        assert ha.procs[0].wait(30) == 3, ha.log("server-0")  # it knew it lost the lead
        wait_until(lambda: ha.api("GET", "/v1/nodes")["nodes"][0]["state"] == "ready", 30, 0.1,
                   what="the node ready under the new leader")
        j = ha.api("GET", f"/v1/jobs/{job['id']}")
        assert j["state"] == "running" and j["attempt"] == 1, j  # never fenced
        ha.api("DELETE", f"/v1/jobs/{job['id']}")


class Submitter(threading.Thread):
    """POSTs jobs to whichever server leads, following 503s like a client
    does; each job appends its id and node to the evidence file. Records the
    ids of acknowledged (201) jobs. An Idempotency-Key per job makes a retry
    of an unanswered submission safe."""

    def __init__(self, ha, evidence):
        super().__init__(daemon=True)
        self.ha = ha
        self.evidence = evidence
        self.acked = []
        self.stop = threading.Event()
        self.current = 0
        self.gave_up = 0

    def submit_one(self, n):
        key = str(uuid.uuid4())
        spec = {"name": f"storm-{n}", "gpus": 1, "retries": 0,
                "command": ["sh", "-c",
                            f'echo "$TIDE_JOB_ID $TIDE_WORK_DIR" >> {self.evidence}; '
                            f'sleep 0.{random.randint(1, 9)}']}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            url = self.ha.urls[self.current]
            status, out, hdrs = http("POST", url + "/v1/jobs", spec, self.ha.admin,
                                     {"Idempotency-Key": key}, timeout=5)
            if status == 201:
                return out["id"]
            if status == 503:
                leader = hdrs.get("X-Tide-Leader") or (out or {}).get("leader")
                self.current = self.ha.urls.index(leader) if leader in self.ha.urls \
                    else (self.current + 1) % len(self.ha.urls)
                if leader == url:
                    time.sleep(0.05)  # it is loading: ask again shortly
            elif status == 0:
                self.current = (self.current + 1) % len(self.ha.urls)
                time.sleep(0.05)
            else:
                raise AssertionError(f"submit: HTTP {status}: {out}")
        self.gave_up += 1
        return None

    def run(self):
        n = 0
        while not self.stop.is_set():
            n += 1
            job_id = self.submit_one(n)
            if job_id is not None:
                self.acked.append(job_id)
            time.sleep(0.02)


def test_kill_9_of_the_leader_loses_and_repeats_no_job():
    rounds = int(os.environ.get("TIDE_HA_ROUNDS", "4"))
    servers = int(os.environ.get("TIDE_HA_SERVERS", "2"))
    with pg_server.PgServer() as pg, HA(pg, servers=servers) as ha:
        start_pair(ha, agents=2)
        evidence = os.path.join(ha.dir, "evidence")
        open(evidence, "w").close()
        os.chmod(evidence, 0o666)
        sub = Submitter(ha, evidence)
        sub.start()
        takeovers = []
        try:
            for r in range(rounds):
                time.sleep(random.uniform(1.0, 4.0))
                old = ha.leader()
                assert old is not None, "no leader before a kill"
                killed = time.monotonic()
                ha.kill_server(old)
                wait_until(lambda: ha.leader() is not None, 30, 0.01, what="a new leader")
                new = ha.leader()
                takeovers.append(time.monotonic() - killed)
                assert new != old
                ha.start_server(old)  # back as a follower
                wait_until(lambda: (ha.health(old) or {}).get("role") == "follower", 20, 0.05,
                           what=f"server {old} following again")
            time.sleep(2)
        finally:
            sub.stop.set()
            sub.join(90)
        acked = sub.acked
        assert acked and sub.gave_up == 0, (len(acked), sub.gave_up)
        # Every acknowledged job exists and ends; none is lost.
        jobs = {}

        def all_final():
            for i in acked:
                if jobs.get(i, {}).get("state") not in ("succeeded", "failed", "cancelled"):
                    status, out, _ = http("GET", f"{ha.urls[ha.leader()]}/v1/jobs/{i}",
                                          token=ha.admin)
                    assert status == 200, f"acknowledged job {i}: HTTP {status}: {out}"
                    jobs[i] = out
                    if out["state"] not in ("succeeded", "failed", "cancelled"):
                        return False
            return True
        wait_until(all_final, 120, 0.5, what="every acknowledged job finished")
        runs = {}
        with open(evidence) as f:
            for line in f:
                job_id, work = line.split(maxsplit=1)
                node = work.split("/agents/")[1].split("/")[0]
                runs.setdefault(int(job_id), []).append(node)
        lost = [i for i in acked if i not in runs]
        duplicated = {i: nodes for i, nodes in runs.items() if len(nodes) > 1}
        failed = [i for i in acked if jobs[i]["state"] != "succeeded"]
        print(f"kill -9 of the leader x{rounds} ({servers} servers): takeover {', '.join(f'{t:.2f}' for t in takeovers)} s"
              f" (median {statistics.median(takeovers):.2f} s, max {max(takeovers):.2f} s); "
              f"{len(acked)} jobs acknowledged, {len(lost)} lost (never ran), "
              f"{len(duplicated)} ran more than once, {len(failed)} did not succeed", flush=True)
        assert not lost, lost
        assert not duplicated, duplicated
        assert not failed, [(i, jobs[i]["state"], jobs[i].get("reason")) for i in failed]
        unacked = [i for i in runs if i not in set(acked)]
        assert not unacked, f"jobs ran that no submission was acknowledged for: {unacked}"
        # The agents followed every new leader within the node timeout: no
        # node was lost, no task fenced.
        lost_nodes = ha.api("GET", "/v1/events?kind=node_lost,node_back")["events"]
        assert not lost_nodes, lost_nodes
        assert all(n["state"] == "ready" for n in ha.api("GET", "/v1/nodes")["nodes"])


def kill_processes_naming(path):
    """SIGKILLs every process whose command line names path: the provider's
    programs (even a create still waiting for `go`, which would start an
    agent later) and the agents they started, with their task guards."""
    for _ in range(3):
        found = []
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if path.encode() in f.read():
                        found.append(int(pid))
            except (OSError, ValueError):
                continue
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not found:
            return
        time.sleep(0.2)


def test_a_create_in_flight_at_the_failover_is_adopted_not_repeated():
    tmp = tempfile.mkdtemp(prefix="tide-ha-exec-")
    os.chmod(tmp, 0o755)
    prog = install_exec_provider(tmp)  # a create for pool `slow` waits for the file `go`
    config = "\n".join([
        "pools:", "  - name: slow", "    gpu: A100", "    gpus_per_node: 1",
        "    gpu_memory_mib: 81920", "    provider: exec", f"    program: {prog}",
        "    min_nodes: 0", "    max_nodes: 2", "    boot_timeout_s: 120",
        "    scale_down_window_s: 600", "    cooldown_s: 0"]) + "\n"

    def lines(name):
        try:
            with open(os.path.join(tmp, name)) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []
    try:
        with pg_server.PgServer() as pg, HA(pg, config=config) as ha:
            start_pair(ha, agents=0)
            job = ha.api("POST", "/v1/jobs", {"gpus": 1, "gpu_model": "A100",
                                              "command": ["sh", "-c", "echo adopted"]}, expect=201)
            wait_until(lambda: any(l.startswith("slow ") for l in lines("creating")), 60, 0.1,
                       what="the slow create to start")
            ha.kill_server(0)  # mid-create: the program runs on
            wait_until(lambda: (ha.health(1) or {}).get("role") == "leader", 20, 0.02,
                       what="server 1 leading")
            time.sleep(3)  # the new leader's list and decisions, with the create still out
            nodes = [n for n in ha.api("GET", "/v1/nodes")["nodes"] if n["pool"] == "slow"]
            assert [n["state"] for n in nodes] == ["provisioning"], nodes
            assert len(lines("creating")) == 1, lines("creating")
            open(os.path.join(tmp, "go"), "w").close()  # the create completes
            wait_until(lambda: ha.api("GET", f"/v1/jobs/{job['id']}")["state"] == "succeeded",
                       90, 0.2, what="the job on the adopted node")
            nodes = [n for n in ha.api("GET", "/v1/nodes")["nodes"] if n["pool"] == "slow"]
            assert len(nodes) == 1 and nodes[0]["name"] == "slow-1", nodes
            assert len(lines("creating")) == 1 and len(lines("created")) == 1, \
                (lines("creating"), lines("created"))
            kinds = [e["kind"] for e in ha.api("GET", "/v1/events")["events"]]
            assert "node_adopting" in kinds, kinds
    finally:
        kill_processes_naming(tmp)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    try:
        run_tests([test_a_follower_answers_503_with_the_leader,
                   test_a_leader_whose_database_session_is_cut_stops_at_once,
                   test_a_leader_cut_off_from_the_database_gives_way_in_seconds,
                   test_a_create_in_flight_at_the_failover_is_adopted_not_repeated,
                   test_kill_9_of_the_leader_loses_and_repeats_no_job])
    finally:
        for h in list(_live):
            h.close()
