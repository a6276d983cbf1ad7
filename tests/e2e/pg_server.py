"""
A throwaway PostgreSQL server for e2e tests: initdb into a temporary
directory, listen on a free loopback port, trust authentication for the
loopback only, and stop (fast) and remove it on close.

PostgreSQL refuses to run as root, so when the tests run as root the
cluster belongs to `nobody` (its directory is made for it); otherwise it
runs as the current user. When PostgreSQL is not installed, `available()`
says why and the caller skips (exit 77).

    with PgServer() as pg:
        url = pg.url            # postgres://tide@127.0.0.1:PORT/tide
        pg.psql("SELECT 1")     # runs SQL through psql, returns stdout
"""
import glob
import os
import shutil
import subprocess
import tempfile
import time

from harness import free_port


def _pg_bin(name):
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def available():
    """None when PostgreSQL can be started here, else the reason it cannot."""
    for tool in ("initdb", "pg_ctl", "postgres", "psql"):
        if not _pg_bin(tool):
            return f"{tool} not found (install Debian's postgresql package)"
    return None


class PgServer:
    def __init__(self, database="tide", user="tide"):
        reason = available()
        if reason:
            raise RuntimeError(reason)
        self.database = database
        self.user = user
        self.port = free_port()
        # World-traversable parent so `nobody` can reach its own 0700 data dir.
        self.dir = tempfile.mkdtemp(prefix="tide-pg-")
        os.chmod(self.dir, 0o755)
        self.data = os.path.join(self.dir, "data")
        self.sockets = os.path.join(self.dir, "run")
        os.mkdir(self.sockets)
        self.log_path = os.path.join(self.dir, "postgres.log")
        self.run_as = {}
        if os.geteuid() == 0:
            self.run_as = {"user": "nobody", "group": "nogroup"}
            shutil.chown(self.sockets, "nobody", "nogroup")
            open(self.log_path, "a").close()
            shutil.chown(self.log_path, "nobody", "nogroup")
        self.url = f"postgres://{user}@127.0.0.1:{self.port}/{database}"
        self.started = False

    def _run(self, args, **kw):
        return subprocess.run(args, check=True, capture_output=True, text=True,
                              cwd=self.dir, **self.run_as, **kw)

    def start(self):
        os.mkdir(self.data, 0o700)
        if self.run_as:
            shutil.chown(self.data, "nobody", "nogroup")
        self._run([_pg_bin("initdb"), "-D", self.data, "-U", self.user, "-A", "trust",
                   "--no-sync", "-E", "UTF8"])
        # 127.0.0.2 too: a test can cut one server's connections alone
        opts = (f"-c listen_addresses=127.0.0.1,127.0.0.2 -c port={self.port} "
                f"-c unix_socket_directories={self.sockets} -c fsync=on "
                f"-c max_connections=200")
        self._run([_pg_bin("pg_ctl"), "-D", self.data, "-l", self.log_path, "-o", opts,
                   "-w", "-t", "60", "start"])
        self.started = True
        self.psql("CREATE DATABASE " + self.database, database="postgres")
        return self

    def psql(self, sql, database=None):
        """Runs sql in psql (unaligned, no headers); returns its stdout."""
        out = subprocess.run(
            [_pg_bin("psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", self.user,
             "-d", database or self.database, "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1",
             "-c", sql], check=True, capture_output=True, text=True)
        return out.stdout

    def log(self):
        try:
            with open(self.log_path) as f:
                return f.read()
        except OSError:
            return ""

    def stop(self):
        if self.started:
            try:
                self._run([_pg_bin("pg_ctl"), "-D", self.data, "-m", "fast", "-w", "stop"],
                          timeout=60)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                pass
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except Exception:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()


if __name__ == "__main__":
    # Self-check: start, query, stop.
    with PgServer() as pg:
        start = time.monotonic()
        assert pg.psql("SELECT 40 + 2").strip() == "42"
        print(f"PostgreSQL at {pg.url} answered in {time.monotonic() - start:.2f}s")
