"""`tide sim`'s command line: flags refused with a reason rather than
ignored or left to crash, and the files and labels a run writes. No server:
each test runs the binary on a small trace in a temporary directory."""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from harness import TIDE, run_tests  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "tests", "data", "sim")


def sim(*args):
    return subprocess.run([TIDE, "sim", *args], capture_output=True, text=True, timeout=120)


def test_an_arrival_rate_too_low_for_100_years_is_a_usage_error():
    # At 1e-15 jobs per hour the arrival times overflowed and the report crashed.
    s = sim("--synthetic", "3", "--arrival-rate", "1e-15", "--quiet", "--json")
    assert s.returncode == 2, (s.returncode, s.stderr)
    assert "--arrival-rate" in s.stderr and "100 years" in s.stderr, s.stderr
    assert "give at least 2.28e-06" in s.stderr, s.stderr
    # The lowest rate it names is taken.
    s = sim("--synthetic", "3", "--arrival-rate", "2.3e-06", "--quiet", "--json")
    assert s.returncode == 0, s.stderr


if __name__ == "__main__":
    run_tests([test_an_arrival_rate_too_low_for_100_years_is_a_usage_error])
