"""End to end: TLS on the API and the agent protocol. `tide up --tls` makes a
CA, a server and an agent certificate and runs the cluster over HTTPS; a
server started by hand with those files serves HTTPS, agents and the CLI
verify it with --ca (host name included) and fail with a clear reason
without it; agents without a client certificate are refused when the server
asks for one; plain HTTP is refused off loopback unless asked for."""
import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import ssl
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from harness import (TIDE, Cluster, check_agent_keeps_connections, free_port, run_tests,  # noqa: E402
                     wait_until)

CERTS = {}  # the files of the first test's `tide up --tls`, for the others
WORK_DIRS = []
atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in WORK_DIRS])


def tide(*args, cwd=None, env=None, timeout=60):
    p = subprocess.run([TIDE] + list(args), capture_output=True, text=True, timeout=timeout,
                       cwd=cwd, env=env)
    for m in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
        assert m not in p.stderr, p.stderr
    return p


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("TIDE_SERVER", "TIDE_TOKEN", "TIDE_CA", "TIDE_TLS_CERT", "TIDE_TLS_KEY")}
    env["HOME"] = env["XDG_CONFIG_HOME"] = tempfile.gettempdir() + "/tide-tls-no-config"
    env.update(extra)
    return env


def certs(client_ca=False):
    assert CERTS, "the tide up --tls test must run first"
    t = {"cert": CERTS["server.crt"], "key": CERTS["server.key"], "ca": CERTS["ca.crt"]}
    if client_ca:
        t.update(client_ca=CERTS["ca.crt"], agent_cert=CERTS["agent.crt"],
                 agent_key=CERTS["agent.key"])
    return t


def test_tide_up_tls_runs_a_job_over_https_and_the_cli_finds_the_ca_by_itself():
    work = tempfile.mkdtemp(prefix="tide-e2e-tls-")
    WORK_DIRS.append(work)
    log = open(os.path.join(work, "up.log"), "wb")
    up = subprocess.Popen([TIDE, "up", "--tls", "--port", "0", "--agents", "1"], cwd=work,
                          stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                          env=clean_env())
    log.close()
    try:
        def up_log():
            with open(os.path.join(work, "up.log"), errors="replace") as f:
                return f.read()
        wait_until(lambda: "tide is up" in up_log() or up.poll() is not None, 60,
                   what="tide up --tls ready")
        assert up.poll() is None, up_log()
        tls = os.path.join(work, ".tide", "tls")
        for name in ("ca.crt", "ca.key", "server.crt", "server.key", "agent.crt", "agent.key"):
            path = os.path.join(tls, name)
            mode = os.stat(path).st_mode & 0o777
            assert mode == (0o600 if name.endswith(".key") else 0o644), (name, oct(mode))
        with open(os.path.join(work, ".tide", "server.url")) as f:
            url = f.read().strip()
        assert url.startswith("https://127.0.0.1:"), url
        # From the directory, the CLI finds URL, token and CA under .tide/.
        env = clean_env()
        p = tide("nodes", cwd=work, env=env)
        assert p.returncode == 0 and "local-1" in p.stdout and "ready" in p.stdout, p.stderr
        p = tide("submit", "--gpus", "1", "--wait", "--", "sh", "-c", "echo over-tls",
                 cwd=work, env=env, timeout=90)
        assert p.returncode == 0, p.stdout + p.stderr
        job_id = [w for w in p.stdout.split() if w.isdigit()][0]
        p = tide("logs", job_id, cwd=work, env=env)
        assert "over-tls" in p.stdout, p.stdout + p.stderr
        # While local-1 is full, the elastic pool's agent (started by the
        # server) joins over HTTPS with the CA and the agent certificate.
        p = tide("submit", "--gpus", "4", "--", "sleep", "120", cwd=work, env=env)
        assert p.returncode == 0, p.stderr
        busy = [w for w in p.stdout.split() if w.isdigit()][0]
        p = tide("submit", "--gpus", "4", "--wait", "--", "sh", "-c", "echo pool-over-tls",
                 cwd=work, env=env, timeout=120)
        assert p.returncode == 0, p.stdout + p.stderr
        p = tide("nodes", "--pool", "elastic", cwd=work, env=env)
        assert p.returncode == 0 and "ready" in p.stdout, p.stdout + p.stderr
        assert tide("cancel", busy, cwd=work, env=env).returncode == 0
        # The same server from elsewhere, without the CA: refused with curl's reason.
        token = open(os.path.join(work, ".tide", "data", "admin.token")).read().strip()
        p = tide("nodes", env=clean_env(TIDE_SERVER=url, TIDE_TOKEN=token), cwd="/")
        assert p.returncode != 0, p.stdout
        assert "cannot verify the tide server at " + url in p.stderr, p.stderr
        assert "certificate" in p.stderr and "--ca" in p.stderr, p.stderr
        p = tide("nodes", "--ca", os.path.join(tls, "ca.crt"), cwd="/",
                 env=clean_env(TIDE_SERVER=url, TIDE_TOKEN=token))
        assert p.returncode == 0 and "local-1" in p.stdout, p.stderr
        for name in ("ca.crt", "ca.key", "server.crt", "server.key", "agent.crt", "agent.key"):
            CERTS[name] = os.path.join(work, name)
            shutil.copy(os.path.join(tls, name), CERTS[name])
    finally:
        if up.poll() is None:
            os.killpg(up.pid, signal.SIGTERM)
            try:
                up.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(up.pid, signal.SIGKILL)
                up.wait(5)
    logs = os.path.join(work, ".tide", "logs")
    for name in ["../../up.log"] + sorted(os.listdir(logs)):
        with open(os.path.join(logs, name), errors="replace") as f:
            text = f.read()
        for m in ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:"):
            assert m not in text, f"{name}:\n{text[-6000:]}"


def test_agents_register_and_run_jobs_over_https_with_client_certificates():
    with Cluster(agents=1, tls=certs(client_ca=True)) as c:
        assert c.url.startswith("https://")
        job = c.submit(command=["sh", "-c", "echo hello-tls"], gpus=1)
        assert c.wait_final([job["id"]])[job["id"]]["state"] == "succeeded"
        assert "hello-tls" in c.logs(job["id"])
        assert "https://" in c.log("server"), c.log("server")
        # An agent without a client certificate is refused, and says why.
        work = os.path.join(c.dir, "agents", "nocert")
        p = tide("agent", "--server", c.url, "--ca", c.tls["ca"], "--token-file",
                 os.path.join(c.data, "join.token"), "--name", "nocert", "--work", work,
                 "--fake-gpus", "1xH200:141GB", env=clean_env(), timeout=60)
        assert p.returncode != 0, p.stderr
        assert "client certificate" in p.stderr, p.stderr
        assert c.node("nocert") is None
        # User routes need no client certificate: the CLI works with the CA alone.
        p = c.cli("nodes", check=True)
        assert "node-1" in p.stdout, p.stdout
        # Private keys others can read are said in the logs (copies: the
        # certificates are shared with other tests).
        assert "readable by others" not in c.log("server") + c.log("agent-node-1")
        for key in ("key", "agent_key"):
            loose = os.path.join(c.dir, f"loose-{key}.pem")
            shutil.copy(c.tls[key], loose)
            os.chmod(loose, 0o644)
            c.tls = dict(c.tls, **{key: loose})
        c.kill_server(signal.SIGTERM)
        c.start_server()
        c.start_agent("node-2")
        assert f"--tls-key {c.tls['key']} is readable by others (mode 644)" in c.log("server")
        assert f"the client key {c.tls['agent_key']} is readable by others" in \
            c.log("agent-node-2")


def test_an_agent_over_https_keeps_its_connections_across_a_server_restart():
    # a TLS handshake per connection, not per request
    with Cluster(agents=1, tls=certs(client_ca=True)) as c:
        check_agent_keeps_connections(c)


def test_an_agent_without_the_ca_cannot_join_and_logs_the_reason():
    with Cluster(agents=0, tls=certs()) as c:
        work = os.path.join(c.dir, "agents", "noca")
        os.makedirs(work)
        log = open(os.path.join(c.dir, "agent-noca.log"), "wb")
        p = subprocess.Popen([TIDE, "agent", "--server", c.url, "--token-file",
                              os.path.join(c.data, "join.token"), "--name", "noca", "--work",
                              work, "--fake-gpus", "1xH200:141GB"], stdout=log,
                             stderr=subprocess.STDOUT, start_new_session=True, env=clean_env())
        log.close()
        c.agents["noca"] = p
        wait_until(lambda: "certificate" in c.log("agent-noca"), 30, what="agent's TLS error")
        assert c.url in c.log("agent-noca"), c.log("agent-noca")
        assert c.node("noca") is None
        # A CA file that is not one is refused at start, naming the option.
        bad = os.path.join(c.dir, "not-a-ca.pem")
        with open(bad, "w") as f:
            f.write("hello\n")
        p = tide("agent", "--server", c.url, "--ca", bad, "--token", "x", "--name", "x",
                 "--work", work, "--fake-gpus", "1xH200:141GB", env=clean_env())
        assert p.returncode == 2 and "--ca" in p.stderr and "no PEM CERTIFICATE" in p.stderr, \
            p.stderr


def test_the_cli_checks_the_ca_and_the_host_name():
    with Cluster(agents=0, tls=certs()) as c:
        env = clean_env(TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
        p = tide("nodes", "--ca", c.tls["ca"], env=env)
        assert p.returncode == 0, p.stderr
        # A certificate that did not sign the server's is the wrong CA.
        p = tide("jobs", "--ca", CERTS["agent.crt"], env=env)
        assert p.returncode != 0 and "cannot verify the tide server" in p.stderr, p.stderr
        assert "is that the CA that signed its certificate?" in p.stderr, p.stderr
        p = tide("jobs", "--ca", os.path.join(c.dir, "missing.pem"), env=env)
        assert p.returncode != 0 and "--ca" in p.stderr and "missing.pem" in p.stderr, p.stderr
        # localhost is in the certificate too.
        p = tide("nodes", "--ca", c.tls["ca"], "--server", f"https://localhost:{c.port}",
                 env=env)
        assert p.returncode == 0, p.stderr
        # Plain HTTP to an HTTPS server gets no answer it could take for one.
        p = tide("nodes", "--server", f"http://127.0.0.1:{c.port}", env=env)
        assert p.returncode != 0, p.stdout


def test_host_names_not_in_the_certificate_are_refused():
    port = free_port()
    data = tempfile.mkdtemp(prefix="tide-e2e-tls-")
    server = subprocess.Popen([TIDE, "server", "--listen", f"0.0.0.0:{port}", "--data", data,
                               "--tls-cert", CERTS["server.crt"], "--tls-key",
                               CERTS["server.key"]], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, start_new_session=True)
    try:
        token = os.path.join(data, "admin.token")
        wait_until(lambda: os.path.exists(token) or server.poll() is not None, 20,
                   what="admin.token")
        env = clean_env(TIDE_CA=CERTS["ca.crt"], TIDE_TOKEN=open(token).read().strip())
        wait_until(lambda: tide("nodes", "--server", f"https://127.0.0.1:{port}", env=env)
                   .returncode == 0 or server.poll() is not None, 20, what="server up")
        assert server.poll() is None, server.stderr.read()
        p = tide("nodes", "--server", f"https://127.0.0.2:{port}", env=env)
        assert p.returncode != 0 and "cannot verify the tide server" in p.stderr, p.stderr
        assert "127.0.0.2" in p.stderr, p.stderr
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(15)
        shutil.rmtree(data, ignore_errors=True)


def test_plain_http_off_loopback_needs_the_explicit_flag():
    data = tempfile.mkdtemp(prefix="tide-e2e-tls-")
    try:
        port = free_port()
        p = tide("server", "--listen", f"0.0.0.0:{port}", "--data", data, timeout=30)
        assert p.returncode != 0, p.stdout
        assert "refusing plain HTTP on 0.0.0.0" in p.stderr and "--tls-cert" in p.stderr \
            and "--insecure-plain-http" in p.stderr, p.stderr
        assert not os.path.exists(os.path.join(data, "admin.token")), "created before refusing"
        # The same from tide.yaml: server.insecure_plain_http must be a boolean.
        cfg = os.path.join(data, "tide.yaml")
        with open(cfg, "w") as f:
            f.write("server:\n  insecure_plain_http: maybe\n")
        p = tide("server", "--config", cfg, "--check-config", timeout=30)
        assert p.returncode != 0 and "insecure_plain_http" in p.stderr, p.stderr
        # A key without its certificate, and a certificate that is not one.
        p = tide("server", "--listen", f"127.0.0.1:{port}", "--data", data,
                 "--tls-key", CERTS["server.key"], timeout=30)
        assert p.returncode != 0 and "--tls-key given without --tls-cert" in p.stderr, p.stderr
        p = tide("server", "--listen", f"127.0.0.1:{port}", "--data", data,
                 "--tls-cert", CERTS["server.key"], "--tls-key", CERTS["server.key"], timeout=30)
        assert p.returncode != 0 and "--tls-cert" in p.stderr and "no PEM CERTIFICATE" in p.stderr, \
            p.stderr
        # A key that is not the certificate's, named with GnuTLS's reason.
        p = tide("server", "--listen", f"127.0.0.1:{port}", "--data", data,
                 "--tls-cert", CERTS["server.crt"], "--tls-key", CERTS["agent.key"], timeout=30)
        assert p.returncode != 0 and "agent.key" in p.stderr and "do not match" in p.stderr, \
            p.stderr
        assert not os.path.exists(os.path.join(data, "admin.token")), "created before refusing"
        # tide.yaml's server.tls_cert/tls_key make the server HTTPS (flags would win).
        with open(cfg, "w") as f:
            f.write(f"server:\n  tls_cert: {CERTS['server.crt']}\n"
                    f"  tls_key: {CERTS['server.key']}\n")
        p = tide("server", "--config", cfg, "--check-config", "--listen", f"0.0.0.0:{port}",
                 timeout=30)
        assert p.returncode == 0 and f"listen https://0.0.0.0:{port}" in p.stdout, \
            p.stdout + p.stderr
        # With the flag, plain HTTP on every address is served.
        server = subprocess.Popen([TIDE, "server", "--listen", f"0.0.0.0:{port}", "--data", data,
                                   "--insecure-plain-http"], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            env = clean_env(TIDE_SERVER=f"http://127.0.0.1:{port}")
            wait_until(lambda: server.poll() is not None or
                       os.path.exists(os.path.join(data, "admin.token")), 20, what="server")
            env["TIDE_TOKEN"] = open(os.path.join(data, "admin.token")).read().strip()
            wait_until(lambda: tide("nodes", env=env).returncode == 0, 20, what="plain API")
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(15)
    finally:
        shutil.rmtree(data, ignore_errors=True)


def test_the_agent_listener_speaks_https_and_wants_client_certificates_too():
    with Cluster(agents=1, tls=certs(client_ca=True), agent_listen=True) as c:
        assert c.agent_url.startswith("https://") and c.agent_url != c.url
        job = c.submit(command=["sh", "-c", "echo hello-agent-listener"], gpus=1)
        assert c.wait_final([job["id"]])[job["id"]]["state"] == "succeeded"
        assert "hello-agent-listener" in c.logs(job["id"])
        assert f"agents on https://127.0.0.1:{c.agent_port}" in c.log("server"), c.log("server")
        work = os.path.join(c.dir, "agents", "nocert")
        p = tide("agent", "--server", c.agent_url, "--ca", c.tls["ca"], "--token-file",
                 os.path.join(c.data, "join.token"), "--name", "nocert", "--work", work,
                 "--fake-gpus", "1xH200:141GB", env=clean_env(), timeout=60)
        assert p.returncode != 0 and "client certificate" in p.stderr, p.stderr
        assert c.node("nocert") is None
    # plain HTTP off loopback is refused on the agent listener as on --listen
    data = tempfile.mkdtemp(prefix="tide-e2e-tls-")
    try:
        p = tide("server", "--listen", f"127.0.0.1:{free_port()}", "--data", data,
                 "--agent-listen", f"0.0.0.0:{free_port()}", "--check-config", timeout=30)
        assert p.returncode == 2 and "refusing plain HTTP on 0.0.0.0 (agent_listen)" in p.stderr, \
            p.stderr
        port = free_port()
        p = tide("server", "--listen", f"127.0.0.1:{port}", "--agent-listen",
                 f"127.0.0.1:{port}", "--data", data, "--check-config", timeout=30)
        assert p.returncode == 2 and "port of its own" in p.stderr, p.stderr
        p = tide("server", "--agent-listen", "nocolon", "--check-config", timeout=30)
        assert p.returncode == 2 and "--agent-listen: expected HOST:PORT" in p.stderr, p.stderr
    finally:
        shutil.rmtree(data, ignore_errors=True)


def node_certificate(tmp, name, purpose="clientAuth"):
    """A certificate whose CN is name, for purpose (a client by default),
    signed by the tide up CA (openssl); returns (cert, key) paths."""
    key, csr, crt = (os.path.join(tmp, f"{name}.{x}") for x in ("key", "csr", "crt"))
    ext = os.path.join(tmp, f"{name}.ext")
    with open(ext, "w") as f:
        f.write(f"extendedKeyUsage = {purpose}\nkeyUsage = digitalSignature\n")
    for argv in (["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                  "-nodes", "-keyout", key, "-subj", f"/CN={name}", "-out", csr],
                 ["x509", "-req", "-in", csr, "-CA", CERTS["ca.crt"], "-CAkey", CERTS["ca.key"],
                  "-set_serial", str(abs(hash(name)) % 10 ** 9 + 1), "-days", "1",
                  "-extfile", ext, "-out", crt]):
        p = subprocess.run(["openssl"] + argv, capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, p.stderr
    return crt, key


def test_client_certificates_can_be_bound_to_node_names():
    tls = dict(certs(client_ca=True))
    with Cluster(agents=0, tls=tls, agent_listen=True,
                 server_args=["--tls-client-cn-is-node"]) as c:
        crt, key = node_certificate(c.dir, "gpu-a")
        # the certificate named gpu-a registers gpu-a (shared join token) and runs its jobs
        c.start_agent("gpu-a", extra=["--tls-cert", crt, "--tls-key", key])
        job = c.submit(command=["sh", "-c", "echo bound"], gpus=1)
        assert c.wait_final([job["id"]])[job["id"]]["state"] == "succeeded"
        # ... and no other name
        p = tide("agent", "--server", c.agent_url, "--ca", c.tls["ca"], "--token-file",
                 os.path.join(c.data, "join.token"), "--name", "gpu-b", "--work",
                 os.path.join(c.dir, "agents", "gpu-b"), "--fake-gpus", "1xH200:141GB",
                 "--tls-cert", crt, "--tls-key", key, env=clean_env(), timeout=60)
        assert p.returncode != 0, p.stderr
        assert "is for 'gpu-a' (its CN), not for node 'gpu-b'" in p.stderr, p.stderr
        assert c.node("gpu-b") is None
        # a web server's certificate from the same CA is no agent's, whatever its CN
        crt_w, key_w = node_certificate(c.dir, "web-a", purpose="serverAuth")
        p = tide("agent", "--server", c.agent_url, "--ca", c.tls["ca"], "--token-file",
                 os.path.join(c.data, "join.token"), "--name", "web-a", "--work",
                 os.path.join(c.dir, "agents", "web-a"), "--fake-gpus", "1xH200:141GB",
                 "--tls-cert", crt_w, "--tls-key", key_w, env=clean_env(), timeout=60)
        assert p.returncode != 0 and "client certificate refused" in p.stderr, p.stderr
        assert c.node("web-a") is None
        # gpu-a's node token with tide up's shared agent certificate ("tide agent"): refused
        with open(os.path.join(c.dir, "agents", "gpu-a", "node.json")) as f:
            node_token = json.load(f)["node_token"]
        ctx = ssl.create_default_context(cafile=c.tls["ca"])
        ctx.load_cert_chain(CERTS["agent.crt"], CERTS["agent.key"])
        req = urllib.request.Request(c.agent_url + "/v1/agent/heartbeat", data=b"{}",
                                     method="POST",
                                     headers={"Authorization": f"Bearer {node_token}"})
        try:
            urllib.request.urlopen(req, timeout=30, context=ctx)
            raise AssertionError("a heartbeat with another node's certificate was accepted")
        except urllib.error.HTTPError as e:
            body = json.loads(e.read())
            assert e.code == 403 and body["error"]["field"] == "client_certificate", body
            assert "'tide agent'" in body["error"]["message"], body
    p = tide("server", "--tls-client-cn-is-node", "--check-config", timeout=30)
    assert p.returncode == 2 and "--tls-client-ca" in p.stderr, p.stderr


if __name__ == "__main__":
    run_tests([
        test_tide_up_tls_runs_a_job_over_https_and_the_cli_finds_the_ca_by_itself,
        test_agents_register_and_run_jobs_over_https_with_client_certificates,
        test_an_agent_over_https_keeps_its_connections_across_a_server_restart,
        test_an_agent_without_the_ca_cannot_join_and_logs_the_reason,
        test_the_cli_checks_the_ca_and_the_host_name,
        test_host_names_not_in_the_certificate_are_refused,
        test_plain_http_off_loopback_needs_the_explicit_flag,
        test_the_agent_listener_speaks_https_and_wants_client_certificates_too,
        test_client_certificates_can_be_bound_to_node_names,
    ])
