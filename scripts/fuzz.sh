#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer harnesses of tests/fuzz/ with clang in
# build-fuzz/ (ASan + UBSan) and runs each for FUZZ_SECONDS (default 60),
# one after another at nice 19. The seed corpus in tests/fuzz/corpus/<t>/
# is read, never written; what the fuzzer learns goes to
# build-fuzz/corpus/<t>/. A crash, leak or UB report fails the run and
# names the reproducer (build-fuzz/findings/<t>/...); replay it with
#   build-fuzz/tests/fuzz/fuzz_<t> FILE
# and keep it in tests/fuzz/corpus/<t>/ once fixed.
# FUZZ_TARGETS="job_spec yaml_json" picks targets.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD=${FUZZ_BUILD:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-60}
ALL="job_spec yaml_json server_config sim_config trace_csv trace_philly trace_itp
  trace_alibaba trace_helios agent_register agent_heartbeat agent_reply query_params
  provider_answer submit_file"
TARGETS=${FUZZ_TARGETS:-$ALL}

if ! [[ $SECONDS_EACH =~ ^[0-9]+$ ]] || [ "$SECONDS_EACH" -lt 1 ]; then
  echo "fuzz: FUZZ_SECONDS must be a whole number of seconds >= 1, got '$SECONDS_EACH'" >&2
  exit 2
fi

# clang and its libFuzzer runtime, installed on demand (not needed by `make test`).
have_libfuzzer() {
  command -v clang >/dev/null 2>&1 &&
    ls "$(clang -print-resource-dir)"/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1
}
if ! have_libfuzzer; then
  echo "fuzz: installing clang and libFuzzer"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-dev ||
    $SUDO apt-get install -y -qq --no-install-recommends clang libfuzzer-dev
  have_libfuzzer || { echo "fuzz: no libFuzzer runtime for $(clang --version | head -1)" >&2; exit 1; }
fi

cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DTIDE_FUZZ=ON >/dev/null
nice cmake --build "$BUILD" --target fuzz_all -j "${JOBS:-$(nproc)}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in $TARGETS; do
  seeds=tests/fuzz/corpus/$t
  [ -d "$seeds" ] || { echo "fuzz: no target '$t' (no $seeds)" >&2; exit 2; }
  mkdir -p "$BUILD/corpus/$t" "$BUILD/findings/$t"
  echo "fuzz: $t for ${SECONDS_EACH}s"
  log="$BUILD/findings/$t/last.log"
  # the CPU seconds it got (the machine may be shared) go to the last line of the log
  TIMEFORMAT="cpu_seconds: %U user + %S system"
  if { time nice -n 19 "$BUILD/tests/fuzz/fuzz_$t" -max_total_time="$SECONDS_EACH" \
      -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$BUILD/findings/$t/" "$BUILD/corpus/$t" "$seeds" >"$log" 2>&1; } 2>>"$log"; then
    grep -E '^#[0-9]+.*DONE|^cpu_seconds' "$log" | tail -2 | sed "s/^/  /" || true
  else
    echo "fuzz: $t FAILED; log: $log" >&2
    grep -E 'ERROR|SUMMARY|Test unit written to' "$log" | sed "s/^/  /" >&2 || true
    failed+=("$t")
  fi
done
if [ "${#failed[@]}" -ne 0 ]; then
  echo "fuzz: findings in: ${failed[*]} (reproducers in $BUILD/findings/<target>/)" >&2
  exit 1
fi
echo "fuzz: no findings"
