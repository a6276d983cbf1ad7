#!/usr/bin/env bash
# `make run`: starts a local cluster with `tide up`, submits a small demo
# workload (jobs of 0-4 GPUs, one that fails, one that overruns its
# --max-runtime), shows the queue draining, then leaves the cluster up until
# Ctrl-C.
set -uo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 PATH/TO/tide" >&2
  exit 2
fi
TIDE=$(realpath "$1")
DIR=.tide

port=8080
if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
  echo "run.sh: port $port is taken; letting tide up pick a free one"
  port=0
fi

"$TIDE" up --dir "$DIR" --port "$port" &
up_pid=$!
stopping=0
stop() {
  stopping=1
  kill -TERM "$up_pid" 2>/dev/null
}
trap stop INT TERM

# Waits for tide up to exit (a trapped signal interrupts `wait`) and exits
# with its status.
finish() {
  local status=0
  while :; do
    wait "$up_pid"
    status=$?
    kill -0 "$up_pid" 2>/dev/null || break
  done
  exit "$status"
}

# tide up writes server.url once the server answers; the banner follows
# once the agents have registered.
for _ in $(seq 1 300); do
  if ! kill -0 "$up_pid" 2>/dev/null; then
    wait "$up_pid"
    echo "run.sh: tide up failed (exit $?); see $DIR/logs/" >&2
    exit 1
  fi
  [ -s "$DIR/server.url" ] && "$TIDE" nodes >/dev/null 2>&1 && break
  sleep 0.1
done
if [ ! -s "$DIR/server.url" ]; then
  echo "run.sh: the server did not come up; see $DIR/logs/" >&2
  kill -TERM "$up_pid"
  wait "$up_pid"
  exit 1
fi
# Use this cluster even if the environment points elsewhere.
TIDE_SERVER=$(cat "$DIR/server.url")
TIDE_TOKEN=$(cat "$DIR/data/admin.token")
export TIDE_SERVER TIDE_TOKEN
sleep 1
if ! kill -0 "$up_pid" 2>/dev/null; then
  wait "$up_pid"
  echo "run.sh: tide up failed (exit $?); see $DIR/logs/" >&2
  exit 1
fi

last_id=
submit() {
  local out
  if out=$("$TIDE" submit "$@"); then
    echo "$out"
    last_id=${out##* }
  else
    echo "run.sh: submit failed: $*" >&2
  fi
}

echo
echo "== submitting the demo workload"
submit --name hello --gpus 0 -- sh -c 'echo "hello from a CPU-only job"; sleep 2'
submit --name train-1gpu --gpus 1 -- \
  sh -c 'for i in 1 2 3; do echo "step $i on GPU $CUDA_VISIBLE_DEVICES"; sleep 1; done'
submit --name train-2gpu --gpus 2 --env EPOCHS=4 -- \
  sh -c 'echo "util=90 mem=40000" > "$TIDE_FAKE_GPU_FILE"; for i in $(seq 1 "$EPOCHS"); do echo "epoch $i on GPUs $CUDA_VISIBLE_DEVICES"; sleep 1; done'
demo=$last_id
submit --name train-4gpu --gpus 4 --priority 10 -- sh -c 'echo step; sleep 6'
submit --name second-4gpu --gpus 4 -- sh -c 'echo "waited for 4 free GPUs"; sleep 3'
submit --name eval --gpus 1 -- sh -c 'echo step; sleep 4'
submit --name fails --gpus 1 -- sh -c 'echo "about to fail"; exit 3'
submit --name too-long --gpus 1 --max-runtime 2 -- sh -c 'echo "sleeping 30 s"; sleep 30'

active() {
  local s n=0
  for s in pending starting running preempted lost; do
    n=$((n + $("$TIDE" jobs -q --state "$s" 2>/dev/null | wc -l)))
  done
  echo "$n"
}

deadline=$((SECONDS + 120))
while [ "$stopping" -eq 0 ]; do
  echo
  echo "== tide jobs ($(date +%T))"
  "$TIDE" jobs
  [ "$(active)" -eq 0 ] && break
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "run.sh: jobs still active after 120 s; moving on"
    break
  fi
  if ! kill -0 "$up_pid" 2>/dev/null; then
    echo "run.sh: tide up stopped; see $DIR/logs/" >&2
    wait "$up_pid"
    exit 1
  fi
  sleep 2
done

[ "$stopping" -eq 1 ] && finish

echo
echo "== final state"
"$TIDE" jobs
"$TIDE" nodes
echo
echo "== tide usage --by pool (cost of the elastic pool's nodes so far)"
"$TIDE" usage --by pool
if [ -n "$demo" ]; then
  echo
  echo "== tide logs $demo (train-2gpu)"
  "$TIDE" logs "$demo"
fi

echo
echo "The cluster stays up until Ctrl-C. Try, from this directory:"
echo "  $TIDE submit --gpus 2 -- sh -c 'echo hi; sleep 10'"
echo "  $TIDE jobs; $TIDE nodes --gpus; $TIDE show ID; $TIDE logs -f ID"
echo "  $TIDE pools; $TIDE usage --by project,day; $TIDE usage --csv"
finish
