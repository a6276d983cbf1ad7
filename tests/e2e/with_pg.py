"""
Runs a command against a throwaway PostgreSQL (pg_server.PgServer): starts
it, puts its URL in TIDE_TEST_STORE_URL (store unit tests) and sets
TIDE_TEST_STORE=postgres (e2e suites start their own), runs the command and
exits with its status. Exits 77 (ctest's skip) with the reason when
PostgreSQL is not installed.

    python3 with_pg.py ./test_store_schema
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pg_server  # noqa: E402


def main():
    if len(sys.argv) < 2:
        print("usage: with_pg.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    reason = pg_server.available()
    if reason:
        print(f"skipped: PostgreSQL is not available: {reason}")
        return 77
    with pg_server.PgServer() as pg:
        env = dict(os.environ, TIDE_TEST_STORE_URL=pg.url, TIDE_TEST_STORE="postgres")
        code = subprocess.call(sys.argv[1:], env=env)
        if code not in (0, 77):
            sys.stderr.write("--- postgres.log (tail) ---\n" + pg.log()[-4000:])
        return code


if __name__ == "__main__":
    sys.exit(main())
