"""What TLS costs the agent protocol: a server and AGENTS (8) idle agents
heartbeating every 100 ms for SECONDS (15), once over plain HTTP and once
over HTTPS with `tide up --tls`'s certificates (agents with client
certificates), reporting the server's and the agents' CPU per request
(utime+stime from /proc, requests from tide_http_requests_total) and the
connections the server accepted (tide_http_connections_total, where the
server has it): agents keep theirs open (http_client.c), so the HTTPS row
pays a handshake per connection, not per request. Reports; never fails on
numbers. Usage: python3 bench/tls.py BUILD_DIR"""
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request

TIDE = os.path.join(sys.argv[1] if len(sys.argv) > 1 else "build", "tide")
AGENTS = int(os.environ.get("TLS_BENCH_AGENTS", "8"))
SECONDS = float(os.environ.get("TLS_BENCH_SECONDS", "15"))
HZ = os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(") ", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


def make_certs(work):
    """Runs `tide up --tls --agents 0` until it is up, for its DIR/tls."""
    d = os.path.join(work, "up")
    p = subprocess.Popen([TIDE, "up", "--tls", "--agents", "0", "--port", "0", "--dir", d],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    for _ in range(300):
        if os.path.exists(os.path.join(d, "server.url")):
            break
        time.sleep(0.1)
    os.killpg(p.pid, signal.SIGTERM)
    p.wait(30)
    return os.path.join(d, "tls")


def run(tls, work):
    port, data = free_port(), tempfile.mkdtemp(dir=work)
    args = [TIDE, "server", "--listen", f"127.0.0.1:{port}", "--data", data,
            "--heartbeat-ms", "100"]
    agent_tls, ctx = [], None
    if tls:
        args += ["--tls-cert", f"{tls}/server.crt", "--tls-key", f"{tls}/server.key",
                 "--tls-client-ca", f"{tls}/ca.crt"]
        agent_tls = ["--ca", f"{tls}/ca.crt", "--tls-cert", f"{tls}/agent.crt",
                     "--tls-key", f"{tls}/agent.key"]
        ctx = ssl.create_default_context(cafile=f"{tls}/ca.crt")
    url = f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    procs = [subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)]
    try:
        for _ in range(100):
            if os.path.exists(os.path.join(data, "join.token")):
                break
            time.sleep(0.1)
        admin = open(os.path.join(data, "admin.token")).read().strip()

        def requests():
            """(requests, connections) the server counted; connections None
            where it does not count them."""
            req = urllib.request.Request(url + "/metrics",
                                         headers={"Authorization": f"Bearer {admin}"})
            text = urllib.request.urlopen(req, context=ctx, timeout=10).read().decode()
            got = {}
            for line in text.splitlines():
                name, _, value = line.partition(" ")
                if name in ("tide_http_requests_total", "tide_http_connections_total"):
                    got[name] = float(value)
            return (got.get("tide_http_requests_total", 0.0),
                    got.get("tide_http_connections_total"))
        for i in range(AGENTS):
            work_dir = os.path.join(data, f"a{i}")
            procs.append(subprocess.Popen(
                [TIDE, "agent", "--server", url, "--token-file", os.path.join(data, "join.token"),
                 "--name", f"b{i}", "--work", work_dir, "--fake-gpus", "1xH200:141GB"]
                + agent_tls, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True))
        time.sleep(3)  # registered and heartbeating
        (r0, n0), c0 = requests(), [cpu_s(p.pid) for p in procs]
        time.sleep(SECONDS)
        (r1, n1), c1 = requests(), [cpu_s(p.pid) for p in procs]
        n = r1 - r0 - 1
        server_ms = (c1[0] - c0[0]) * 1000 / n
        agents_ms = sum(b - a for a, b in zip(c0[1:], c1[1:])) * 1000 / n
        conns = f"{n1 - n0 - 1:.0f}" if n0 is not None and n1 is not None else "uncounted"
        print(f"{'https' if tls else 'http '}: {n:.0f} requests on {conns} new connections in "
              f"{SECONDS:.0f} s, server {server_ms:.2f} ms CPU per request, agents "
              f"{agents_ms:.2f} ms CPU per request")
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            p.wait(30)


def main():
    print(f"== tls: {AGENTS} agents heartbeating every 100 ms, {SECONDS:.0f} s each way")
    with tempfile.TemporaryDirectory() as work:
        tls = make_certs(work)
        if not os.path.exists(os.path.join(tls, "ca.crt")):
            print("tide up --tls made no certificates; skipping")
            return
        run(None, work)
        run(tls, work)


if __name__ == "__main__":
    main()
