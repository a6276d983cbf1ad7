"""End to end: a server whose disk fails a flush stops (exit 3) instead of
answering 500 for ever while its agents fence their jobs; restarted, it
loads what its database file holds. fdatasync is made to fail by a
preloaded library (fail_fdatasync.c, TIDE_FAIL_SYNC_LIB)."""
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from harness import Cluster, run_tests, wait_until  # noqa: E402

SKIP = 77


def test_a_failed_flush_stops_the_server_and_a_restart_recovers():
    lib = os.environ.get("TIDE_FAIL_SYNC_LIB")
    with Cluster(agents=1) as c:
        flag = os.path.join(c.dir, "disk-bad")
        c.restart_server_preloaded(lib, TIDE_TEST_FAIL_SYNC=flag)
        done = c.submit(command=["true"], gpus=1)
        assert c.wait_final([done["id"]], timeout=30)[done["id"]]["state"] == "succeeded"
        open(flag, "w").close()  # the disk goes bad
        try:
            c.submit(command=["true"], gpus=1)
        except Exception:
            pass  # the answer never comes: the server stops first
        assert c.server.wait(20) == 3, c.log("server")
        assert "stopping at once" in c.log("server"), c.log("server")
        os.unlink(flag)
        c.start_server()  # without the library: a disk that works again
        assert c.job(done["id"])["state"] == "succeeded"
        late = c.submit(command=["true"], gpus=1)
        assert c.wait_final([late["id"]], timeout=60)[late["id"]]["state"] == "succeeded"


if __name__ == "__main__":
    if not os.environ.get("TIDE_FAIL_SYNC_LIB"):
        print("SKIP: TIDE_FAIL_SYNC_LIB is not set (ctest sets it)", flush=True)
        sys.exit(SKIP)
    run_tests([test_a_failed_flush_stops_the_server_and_a_restart_recovers])
