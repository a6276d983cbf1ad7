"""End to end: the API under a slowloris flood and bad bodies still answers
others, agents keep heartbeating, and nothing accepted is lost."""
import os
import resource
import socket
import sys
import threading
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

HALF_OPEN = 2000
HEADER_TIMEOUT_S = 10  # src/server/http_guard.h
PER_IP_LIMIT = 64      # src/server/http_guard.h
# An answer within this is "prompt" here: far above any normal reply even
# on a loaded 2-core machine, far below the node timeout x flood length.
PROMPT_S = 8


def raise_fd_limit():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def open_half(host, port, n, source=None):
    """n connections that each sent the start of a request, never its end
    (from the local address source when given)."""
    socks = []
    for i in range(n):
        s = socket.create_connection((host, port), timeout=10,
                                     source_address=(source, 0) if source else None)
        s.sendall(f"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nX-Slow-{i}: 1\r\n".encode())
        socks.append(s)
    return socks


def still_open(s):
    """True while the server has not closed s."""
    s.setblocking(False)
    try:
        return s.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        s.setblocking(True)


class Dribbler(threading.Thread):
    """Sends one more header line on every socket every few seconds, inside
    the header timeout, so the server has no reason to drop them."""

    def __init__(self, socks, every_s=3.0):
        super().__init__(daemon=True)
        self.socks, self.every_s = socks, every_s
        self.stop = threading.Event()

    def run(self):
        k = 0
        while not self.stop.wait(self.every_s):
            k += 1
            for s in self.socks:
                try:
                    s.sendall(f"X-More-{k}: 1\r\n".encode())
                except OSError:
                    pass


RAW_ABUSE = [
    b"\x00\x01\x02 not http at all\r\n\r\n",                       # malformed request line
    b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 200000 + b"\r\n\r\n",  # huge header
    b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"comm",  # body cut
    b"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  # bad chunk
]


def raw_abuse(port, payload):
    """Sends payload on a new connection, reads what comes back (if anything)
    and hangs up; returns the status line or b""."""
    with socket.create_connection(("127.0.0.1", port), timeout=PROMPT_S) as s:
        try:
            s.sendall(payload)
            s.shutdown(socket.SHUT_WR)
            return s.recv(4096).split(b"\r\n")[0]
        except OSError:
            return b""


def timed(fn):
    start = time.monotonic()
    out = fn()
    return out, time.monotonic() - start


def healthz(url):
    with urllib.request.urlopen(url + "/healthz", timeout=PROMPT_S) as r:
        return r.status


def test_slowloris_of_2000_connections_and_bad_bodies_leave_the_api_and_agents_served():
    assert raise_fd_limit() > HALF_OPEN + 200, "the test needs more open files"
    with Cluster(agents=1, node_timeout_ms=3000, heartbeat_ms=300) as c:
        job = c.submit(command=["sleep", "600"], gpus=1)
        c.wait_state(job["id"], "running")
        attempt = c.job(job["id"])["attempt"]
        socks = open_half("127.0.0.1", c.port, HALF_OPEN)
        dribbler = Dribbler(socks)
        dribbler.start()
        try:
            deadline = time.monotonic() + 4 * c.node_timeout_ms / 1000
            bad = [
                (b'{"command": ["true"], "gpus": ', 400),                  # truncated
                (b"[" * 100000 + b"]" * 100000, 400),                       # deeply nested
                (b'{"a":' * 5000 + b"1" + b"}" * 5000, 400),                # nested objects
                (b'{"command": ["' + b"x" * (2 << 20) + b'"]}', 413),       # oversized
                (b"\xff\xfe{}", 400),                                        # not UTF-8
                (b"", 400),                                                  # empty
                (b'{"command": ["true"]} trailing', 400),                   # junk after
            ]
            rounds = 0
            while time.monotonic() < deadline:
                status, took = timed(lambda: healthz(c.url))
                assert status == 200 and took < PROMPT_S, (status, took)
                (status, out), took = timed(lambda: c.request("GET", "/v1/jobs"))
                assert status == 200 and took < PROMPT_S, (status, took)
                assert [j["id"] for j in out["jobs"]] == [job["id"]], out
                body, want = bad[rounds % len(bad)]
                status, out = c.request("POST", "/v1/jobs", raw=body)
                assert status == want, (status, out, body[:40])
                assert out["error"]["message"], out
                # the agent protocol is refused the same way, not crashed
                status, out = c.request("POST", "/v1/agent/register", raw=body,
                                        token=c.join)
                assert status in (400, 413), (status, out)
                line = raw_abuse(c.port, RAW_ABUSE[rounds % len(RAW_ABUSE)])
                assert line == b"" or b" 4" in line, line  # a 4xx or a hang-up
                assert c.node("node-1")["state"] == "ready", c.node("node-1")
                rounds += 1
                time.sleep(0.3)
            assert rounds >= len(bad)
            # the flood was real: the server kept (nearly) every connection
            alive = sum(still_open(s) for s in socks)
            assert alive >= HALF_OPEN * 0.95, alive
        finally:
            dribbler.stop.set()
            dribbler.join()
            for s in socks:
                s.close()
        j = c.job(job["id"])
        assert j["state"] == "running" and j["attempt"] == attempt, j
        kinds = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
        assert "node_lost" not in kinds, kinds
        assert len(c.jobs()) == 1  # none of the bad bodies made a job


def server_rss_kib(c):
    with open(f"/proc/{c.server.pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_bodies_of_requests_whose_token_cannot_pass_are_not_held_in_memory():
    # 40 connections, each most of a 1 MiB body sent and then silent: with
    # no token, or a made-up one, none of it is kept (it was: 40 MiB); nor
    # is the body of a GET or HEAD, which no route reads (it was, to 1 MiB
    # each, even with no token: GET / and HEAD /healthz need none).
    with Cluster(agents=0) as c:
        body = b"x" * (1024 * 1024 - 4096)
        before = server_rss_kib(c)
        socks = []
        for i in range(60):
            s = socket.create_connection(("127.0.0.1", c.port), timeout=10)
            auth = "" if i % 2 else "Authorization: Bearer made-up\r\n"
            line = ("POST /v1/jobs", "GET /", "HEAD /healthz")[i % 3]
            s.sendall(f"{line} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json"
                      f"\r\nContent-Length: {1024 * 1024}\r\n\r\n".encode() + body)
            socks.append(s)
        time.sleep(1)
        grown_mib = (server_rss_kib(c) - before) / 1024
        assert grown_mib < 16, f"the server holds {grown_mib:.0f} MiB of bodies it will refuse"
        # a real token's body is read and served as ever
        job = c.submit(command=["true"], gpus=0)
        assert job["id"] > 0
        for s in socks:
            s.close()


def test_a_request_with_both_content_length_and_transfer_encoding_is_refused_and_closed():
    """RFC 9112, 6.1: a proxy in front could frame it by its length while
    the server reads it chunked, so the bytes after it (here a second
    request) might be another client's: 400, and nothing more is read."""
    with Cluster(agents=0) as c:
        s = socket.create_connection(("127.0.0.1", c.port), timeout=10)
        s.sendall(f"POST /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {c.admin}\r\n"
                  "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                  f"GET /v1/jobs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {c.admin}\r\n"
                  "\r\n".encode())
        got = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        assert got.startswith(b"HTTP/1.1 400"), got[:200]
        assert b"Content-Length or Transfer-Encoding, not both" in got, got
        assert got.count(b"HTTP/1.1 ") == 1, got
        assert c.jobs() == []


def test_a_connection_that_stops_sending_its_headers_is_closed():
    with Cluster(agents=0) as c:
        slow = open_half("127.0.0.1", c.port, 1)[0]
        idle = socket.create_connection(("127.0.0.1", c.port), timeout=10)
        assert still_open(slow) and still_open(idle)
        wait_until(lambda: not still_open(slow) and not still_open(idle),
                   HEADER_TIMEOUT_S * 3, 0.5, what="the server to close silent connections")
        slow.close()
        idle.close()
        # a keep-alive connection between requests has the same short timeout
        s = socket.create_connection(("127.0.0.1", c.port), timeout=10)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        assert b"200" in s.recv(4096).split(b"\r\n")[0]
        wait_until(lambda: not still_open(s), HEADER_TIMEOUT_S * 3, 0.5,
                   what="the server to close an idle keep-alive connection")
        s.close()
        assert healthz(c.url) == 200


def test_headers_up_to_the_documented_size_are_served_and_larger_ones_get_431():
    """Each connection has 16 KiB for its headers and buffers (http.c,
    docs/api.md "Connection limits"): a 12 KiB header block is served, a
    20 KiB one is refused (431), and the server goes on answering."""
    with Cluster(agents=0) as c:
        def get_with(pad):
            return raw_abuse(c.port, (f"GET /v1/jobs HTTP/1.1\r\nHost: x\r\n"
                                      f"Authorization: Bearer {c.admin}\r\n"
                                      f"X-Pad: {'a' * pad}\r\n\r\n").encode())
        assert get_with(12 * 1024).startswith(b"HTTP/1.1 200"), get_with(12 * 1024)
        # The server answers 431 and closes while the rest of the block is
        # still unread, so the kernel may reset the connection and drop the
        # answer before this side reads it: refused is 431 or a reset.
        big = get_with(20 * 1024)
        assert big.startswith(b"HTTP/1.1 431") or big == b"", big
        assert healthz(c.url) == 200


# A client other than this machine's own 127.0.0.1: the server exempts only
# that one (and ::1) from the per-address cap, so a test can play an outside
# client from another loopback address without leaving this machine.
OTHER_CLIENT = "127.0.0.2"


def test_one_outside_address_holds_at_most_the_per_address_limit():
    raise_fd_limit()
    with Cluster(agents=0) as c:
        held = open_half("127.0.0.1", c.port, PER_IP_LIMIT, source=OTHER_CLIENT)
        extra = open_half("127.0.0.1", c.port, 1, source=OTHER_CLIENT)[0]
        wait_until(lambda: not still_open(extra), 10, 0.2, what="the extra connection refused")
        assert sum(still_open(s) for s in held) == PER_IP_LIMIT
        # 127.0.0.1 is not limited, and others are still served
        more = open_half("127.0.0.1", c.port, PER_IP_LIMIT + 10)
        assert all(still_open(s) for s in more)
        assert healthz(c.url) == 200
        # a closed connection frees its place
        for s in held[:5]:
            s.close()

        def replaced():
            s = open_half("127.0.0.1", c.port, 1, source=OTHER_CLIENT)[0]
            ok = (time.sleep(0.3), still_open(s))[1]
            s.close()
            return ok
        wait_until(replaced, 10, 0.3, what="a place freed for the address")
        for s in held[5:] + more + [extra]:
            s.close()


# With an agent listener the connection budget is split (src/server/http.c):
# a quarter for agents, the rest for the API. The budget is the server's
# open-file limit less 256 (src/server/http_guard.c), so a server started
# with 1024 files has 768: 576 for the API, 192 for agents.
SERVER_NOFILE = 1024
API_BUDGET = (SERVER_NOFILE - 256) - (SERVER_NOFILE - 256) // 4


def get_status(url, path, timeout=PROMPT_S):
    try:
        with urllib.request.urlopen(url + path, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def test_agents_on_their_own_listener_keep_heartbeating_while_the_api_is_flooded_full():
    raise_fd_limit()
    with Cluster(agents=1, agent_listen=True, server_nofile=SERVER_NOFILE,
                 node_timeout_ms=3000, heartbeat_ms=300) as c:
        job = c.submit(command=["sleep", "600"], gpus=1)
        c.wait_state(job["id"], "running")
        attempt = c.job(job["id"])["attempt"]
        # each listener serves its own routes only, and says where the others are
        status, out = c.request("POST", "/v1/agent/register", {"name": "x"}, token=c.join)
        assert status == 404 and "agent listener" in out["error"]["message"], (status, out)
        status, body = get_status(c.agent_url, "/v1/jobs")
        assert status == 404 and b"only /v1/agent/* and /healthz" in body, (status, body)
        assert get_status(c.agent_url, "/healthz")[0] == 200
        # fill the API's whole connection budget (127.0.0.1 has no per-address cap)
        socks = open_half("127.0.0.1", c.port, API_BUDGET + 20)
        dribbler = Dribbler(socks)
        dribbler.start()
        try:
            # the flood is real: the main listener answers nobody now
            try:
                status = get_status(c.url, "/healthz", timeout=3)[0]
            except OSError:
                status = None
            assert status is None, f"the API still answered ({status}) with its budget full"
            # a new agent needs new connections: it registers all the same
            c.start_agent("node-2", wait=False)
            wait_until(lambda: "registered as node" in c.log("agent-node-2"), 20, 0.3,
                       what="node-2 to register during the flood")
            # for 4 node timeouts the agent listener answers, and heartbeats go on
            deadline = time.monotonic() + 4 * c.node_timeout_ms / 1000
            while time.monotonic() < deadline:
                status, took = timed(lambda: get_status(c.agent_url, "/healthz")[0])
                assert status == 200 and took < PROMPT_S, (status, took)
                assert all(p.poll() is None for p in c.agents.values()), c.all_logs()
                time.sleep(0.5)
        finally:
            dribbler.stop.set()
            dribbler.join()
            for s in socks:
                s.close()
        wait_until(lambda: c._healthy(), 30, 0.5, what="the API to answer again")
        # had heartbeats stopped, the node would have been lost and the job requeued
        j = c.job(job["id"])
        assert j["state"] == "running" and j["attempt"] == attempt, j
        assert c.node("node-1")["state"] == "ready", c.node("node-1")
        assert c.node("node-2")["state"] == "ready", c.node("node-2")
        kinds = [e["kind"] for e in c.api("GET", "/v1/events")["events"]]
        assert "node_lost" not in kinds, kinds


if __name__ == "__main__":
    run_tests([
        test_slowloris_of_2000_connections_and_bad_bodies_leave_the_api_and_agents_served,
        test_a_connection_that_stops_sending_its_headers_is_closed,
        test_bodies_of_requests_whose_token_cannot_pass_are_not_held_in_memory,
        test_headers_up_to_the_documented_size_are_served_and_larger_ones_get_431,
        test_one_outside_address_holds_at_most_the_per_address_limit,
        test_agents_on_their_own_listener_keep_heartbeating_while_the_api_is_flooded_full,
    ])
