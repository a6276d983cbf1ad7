"""End to end: the CLI. With several servers (--server URL,URL...), a dead
first URL is skipped; a follower's 503 "not the leader" hint is followed
only to a URL in the list (the token never goes elsewhere); when every URL
fails the error says what each answered; a submit whose answer was lost is
retried on the next server with the same Idempotency-Key and makes one job.
The followers and the lossy proxy are small Python servers in this file.
Also `--array 0-M`, Slurm's spelling of M+1 tasks, `submit --json`'s
answer printed as it came (exit 1 when stdout fails), and that the client
commands and the agent run from the executable alone while server and up
need tide-roles.so beside it."""
import http.server
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(__file__))
from harness import TIDE, Cluster, free_port, run_tests, wait_until  # noqa: E402


class Fake:
    """A loopback HTTP server in a thread that answers every request with
    a follower's 503 naming leader (or, with leader=None, a plain 200), and
    records what it was sent."""

    def __init__(self, leader):
        self.hits = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                fake.hits.append((self.command, self.path, self.headers.get("Authorization"),
                                  body))
                if leader is None:
                    out, status = b'{"jobs":[]}', 200
                else:
                    out, status = json.dumps({"error": "not the leader",
                                              "leader": leader}).encode(), 503
                self.send_response(status)
                if leader is not None:
                    self.send_header("X-Tide-Leader", leader)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            do_GET = do_POST = do_DELETE = answer

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class LossyProxy:
    """Passes each request on to target unchanged (headers included), then
    resets the client's connection instead of answering: a leader that
    committed a submit and died before its answer left."""

    def __init__(self, target_port):
        self.target_port = target_port
        self.forwarded = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                while len(body) < length:
                    body += conn.recv(65536)
                with socket.create_connection(("127.0.0.1", self.target_port)) as up:
                    up.sendall(head + b"\r\n\r\n" + body)
                    answer = b""
                    while chunk := up.recv(65536):
                        answer += chunk
                self.forwarded += 1 if answer.startswith(b"HTTP/1.1 2") else 100
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self):
        self.sock.close()


def dead_url():
    return f"http://127.0.0.1:{free_port()}"


def submit(c, servers, *cmd):
    return c.cli("submit", "--server", servers, "--gpus", "0", "--", *cmd)


def job_count(c):
    return len(c.api("GET", "/v1/jobs")["jobs"])


def test_a_dead_first_server_is_skipped():
    with Cluster(agents=0) as c:
        p = submit(c, f"{dead_url()},{c.url}", "true")
        assert p.returncode == 0 and "submitted job" in p.stdout, (p.stdout, p.stderr)
        assert job_count(c) == 1
        p = c.cli("jobs", "--server", f"{dead_url()}, {c.url}/", check=True)
        assert "true" in p.stdout, p.stdout


def test_a_follower_hint_to_a_listed_server_is_followed():
    with Cluster(agents=0) as c:
        follower, other = Fake(c.url), Fake(None)
        try:
            # the hint skips 'other', which is before the leader in the list
            p = submit(c, f"{follower.url},{other.url},{c.url}", "true")
            assert p.returncode == 0 and "submitted job" in p.stdout, (p.stdout, p.stderr)
            assert len(follower.hits) == 1 and other.hits == [], (follower.hits, other.hits)
            assert job_count(c) == 1
        finally:
            follower.close()
            other.close()


def test_a_follower_hint_elsewhere_is_never_followed():
    with Cluster(agents=0) as c:
        elsewhere = Fake(None)
        follower = Fake(elsewhere.url)
        try:
            p = submit(c, f"{follower.url},{c.url}", "true")
            assert p.returncode == 0 and "submitted job" in p.stdout, (p.stdout, p.stderr)
            assert elsewhere.hits == [], elsewhere.hits  # the token never went there
            assert follower.hits[0][2] == f"Bearer {c.admin}", follower.hits
            assert job_count(c) == 1
        finally:
            follower.close()
            elsewhere.close()


def test_when_every_server_fails_the_error_says_what_each_answered():
    with Cluster(agents=0) as c:
        follower = Fake("http://10.255.255.1:8080")
        dead = dead_url()
        try:
            p = submit(c, f"{follower.url},{dead}", "true")
            assert p.returncode != 0, p.stdout
            assert follower.url in p.stderr and dead in p.stderr, p.stderr
            assert "not the leader" in p.stderr and "not in the list" in p.stderr, p.stderr
            assert "refused" in p.stderr, p.stderr
            assert job_count(c) == 0
        finally:
            follower.close()


def test_a_submit_whose_answer_was_lost_is_retried_without_a_duplicate():
    with Cluster(agents=0) as c:
        proxy = LossyProxy(c.port)
        try:
            p = submit(c, f"{proxy.url},{c.url}", "echo", "once")
            assert p.returncode == 0, p.stderr
            assert proxy.forwarded == 1, proxy.forwarded
            jobs = c.api("GET", "/v1/jobs")["jobs"]
            assert len(jobs) == 1, jobs
            assert p.stdout.strip() == f"submitted job {jobs[0]['id']}", p.stdout
            # a request that is not safe to repeat is not sent twice
            p = c.cli("hold", "--server", f"{proxy.url},{c.url}", str(jobs[0]["id"]))
            assert p.returncode != 0 and "closed the connection" in p.stderr, p.stderr
            assert proxy.forwarded == 2, proxy.forwarded
        finally:
            proxy.close()


def test_an_array_whose_answer_was_lost_is_retried_without_duplicates():
    with Cluster(agents=0) as c:
        proxy = LossyProxy(c.port)
        try:
            p = c.cli("submit", "--server", f"{proxy.url},{c.url}", "--gpus", "0", "--array",
                      "3", "--", "true")
            assert p.returncode == 0, p.stderr
            assert proxy.forwarded == 1, proxy.forwarded
            ids = sorted(j["id"] for j in c.jobs())
            assert len(ids) == 3, ids
            assert p.stdout.strip() == f"submitted jobs {ids[0]}-{ids[-1]}", p.stdout
        finally:
            proxy.close()


def test_an_array_the_server_refuses_names_the_flag_and_makes_nothing():
    with Cluster(agents=1, fake_gpus="2xH200:141GB") as c:
        p = c.cli("submit", "--gpus", "9", "--array", "4", "--", "true")
        assert p.returncode == 1, (p.returncode, p.stdout, p.stderr)
        assert p.stderr.startswith("tide submit: gpus: ") and "(--gpus)" in p.stderr, p.stderr
        p = c.cli("submit", "--gpus", "0", "--array", "2", "--depends-on", "999999", "--",
                  "true")
        assert p.returncode == 1 and "depends_on: job 999999 does not exist" in p.stderr, p.stderr
        assert c.jobs() == []


def test_a_bad_server_list_is_refused_naming_its_source():
    with Cluster(agents=0) as c:
        p = c.cli("jobs", "--server", f"{c.url},,{c.url}")
        assert p.returncode != 0 and "--server" in p.stderr and "empty" in p.stderr, p.stderr
        env_p = c.cli("jobs", "--server", "ftp://x")
        assert env_p.returncode != 0 and "only http:// and https://" in env_p.stderr


def test_an_array_range_from_zero_is_that_many_tasks():
    with Cluster(agents=0) as c:
        p = c.cli("submit", "--array", "0-2", "--gpus", "0", "--", "true", check=True)
        jobs = c.jobs()
        assert sorted(j["name"] for j in jobs) == ["true[0]", "true[1]", "true[2]"], jobs
        ids = sorted(j["id"] for j in jobs)
        assert p.stdout.strip() == f"submitted jobs {ids[0]}-{ids[-1]}", p.stdout
        p = c.cli("submit", "--array", "1-3", "--", "true")
        assert p.returncode == 2 and "--array" in p.stderr and "starts at 0" in p.stderr
        p = c.cli("submit", "--array", "0-9223372036854775807", "--", "true")  # overflowed
        assert p.returncode == 2 and "at most 10000 tasks" in p.stderr, p.stderr
        assert len(c.jobs()) == 3


def test_submit_json_prints_the_answer_as_it_came_and_fails_when_stdout_does():
    with Cluster(agents=0) as c:
        p = c.cli("submit", "--json", "--gpus", "0", "--", "true", check=True)
        job = json.loads(p.stdout)
        assert job["state"] == "pending" and job["spec"]["command"] == ["true"], job
        env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
        with open("/dev/full", "w") as full:
            p = subprocess.run([TIDE, "submit", "--json", "--gpus", "0", "--", "true"], env=env,
                               stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
        assert p.returncode == 1, (p.returncode, p.stderr)
        assert len(c.jobs()) == 2  # submitted all the same: only its answer was lost


def test_other_users_words_reach_the_terminal_with_their_control_characters_escaped():
    # A command argument, a hold reason: a user's text, which could move the
    # operator's cursor, erase lines or write the clipboard.
    with Cluster(agents=0) as c:
        job = c.submit(command=["echo", "\x1b]52;c;aGk=\x07"], gpus=0)
        c.cli("hold", str(job["id"]), "--reason", "\x1b[1A\x1b[2Kok \u009b", check=True)
        outputs = {
            "show": c.cli("show", str(job["id"]), check=True).stdout,
            "jobs": c.cli("jobs", check=True).stdout,
            "events": c.cli("events", check=True).stdout,
        }
        for what, out in outputs.items():
            assert "\x1b" not in out and "\x07" not in out and "\u009b" not in out, (what, out)
        assert "\\x1b]52;c;aGk=\\x07" in outputs["show"], outputs["show"]
        assert "\\x1b[1A\\x1b[2Kok \\u009b" in outputs["events"], outputs["events"]
        # --json keeps the data as it is (JSON-escaped)
        shown = json.loads(c.cli("show", "--json", str(job["id"]), check=True).stdout)
        assert shown["spec"]["command"][1] == "\x1b]52;c;aGk=\x07", shown


def test_an_unknown_job_state_is_a_usage_error():
    with Cluster(agents=0) as c:
        p = c.cli("jobs", "--state", "bogus")
        assert p.returncode == 2 and "is not a job state" in p.stderr, (p.returncode, p.stderr)
        assert c.cli("jobs", "--state", "pending").returncode == 0


def test_submit_wait_escapes_the_reasons_it_reports():
    # tide submit --wait reports what becomes of the job, with reasons that
    # may be another user's words (a requeue's)
    with Cluster(agents=1, kill_grace_s=5) as c:
        env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
        # slow to stop: it stays "preempted" (with the requeue's reason) a while
        slow = 'trap "sleep 4; exit 0" TERM; while :; do sleep 0.2; done'
        waiting = subprocess.Popen([TIDE, "submit", "--wait", "--gpus", "1", "--", "sh", "-c", slow],
                                   env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        job = wait_until(lambda: [j for j in c.jobs() if j["state"] == "running"], 20,
                         what="the waited job running")[0]
        c.api("POST", f"/v1/jobs/{job['id']}/requeue", {"reason": "x\x1b]0;pwned\x07y"})
        wait_until(lambda: c.job(job["id"])["attempt"] == 2 and c.job(job["id"])["state"] == "running",
                   30, what="attempt 2 running")
        time.sleep(1.5)  # --wait polls, and reports the change
        c.api("DELETE", f"/v1/jobs/{job['id']}")
        out, err = waiting.communicate(timeout=30)
        assert "\x1b" not in out + err and "\x07" not in out + err, (out, err)
        assert "x\\x1b]0;pwned\\x07y" in err, err


def test_client_commands_need_only_the_executable_and_roles_say_what_is_missing():
    with Cluster(agents=0) as c:
        alone = tempfile.mkdtemp(prefix="tide-alone-")
        try:
            shutil.copy(TIDE, os.path.join(alone, "tide"))
            env = dict(os.environ, TIDE_SERVER=c.url, TIDE_TOKEN=c.admin)
            p = subprocess.run([os.path.join(alone, "tide"), "submit", "--gpus", "0", "--", "true"],
                               env=env, capture_output=True, text=True, timeout=60)
            assert p.returncode == 0 and "submitted job" in p.stdout, p.stderr
            # the agent is in the executable: a node needs no more than it
            p = subprocess.run([os.path.join(alone, "tide"), "agent", "--help"], env=env,
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 0 and "--server" in p.stdout, (p.returncode, p.stderr)
            p = subprocess.run([os.path.join(alone, "tide"), "server", "--help"], env=env,
                               capture_output=True, text=True, timeout=60)
            assert p.returncode == 1, (p.returncode, p.stdout)
            assert os.path.join(alone, "tide-roles.so") in p.stderr, p.stderr
            assert "beside the tide executable" in p.stderr, p.stderr
        finally:
            shutil.rmtree(alone)


if __name__ == "__main__":
    run_tests([
        test_a_dead_first_server_is_skipped,
        test_a_follower_hint_to_a_listed_server_is_followed,
        test_a_follower_hint_elsewhere_is_never_followed,
        test_when_every_server_fails_the_error_says_what_each_answered,
        test_a_submit_whose_answer_was_lost_is_retried_without_a_duplicate,
        test_an_array_whose_answer_was_lost_is_retried_without_duplicates,
        test_an_array_the_server_refuses_names_the_flag_and_makes_nothing,
        test_a_bad_server_list_is_refused_naming_its_source,
        test_an_array_range_from_zero_is_that_many_tasks,
        test_submit_json_prints_the_answer_as_it_came_and_fails_when_stdout_does,
        test_other_users_words_reach_the_terminal_with_their_control_characters_escaped,
        test_submit_wait_escapes_the_reasons_it_reports,
        test_an_unknown_job_state_is_a_usage_error,
        test_client_commands_need_only_the_executable_and_roles_say_what_is_missing,
    ])
