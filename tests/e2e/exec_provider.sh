#!/bin/sh
# The e2e tests' exec provider (docs/providers.md): nodes are local
# `tide agent` processes. Files in the script's folder steer it:
#   fail       N: the next N creates fail ("quota exceeded")
#   go         a create for the pool `slow` waits for it (at most 120 s),
#              so a test decides how long that call is in flight
#   list-POOL  what `list POOL` prints (else `list`, else no nodes)
#   hang-delete  a delete answers, closes its output and runs on
#   fail-after N: the next N creates make their nodes, answer, then fail
#              ("tagging failed", exit 3)
#   bg-stdout  agents are started holding the create's stdout (a script
#              that forgot to redirect it), and a child that writes on
#              stderr ten times a second until that pipe is closed
#   long-id    ids are 200 bytes long (a cloud's full resource path)
#   no-id      creates name their nodes but give no ids
# and it logs: creating / created (pool and node names), deleted, listed,
# and sigign (the signals a list runs with ignored, from /proc).
dir=$(dirname "$0")
case "$1" in
create)
  echo "$2 $TIDE_NODE_NAMES" >> "$dir/creating"
  if [ -f "$dir/fail" ] && [ "$(cat "$dir/fail")" -gt 0 ]; then
    echo $(( $(cat "$dir/fail") - 1 )) > "$dir/fail"
    echo "quota exceeded" >&2
    exit 1
  fi
  if [ "$2" = slow ]; then
    echo $$ > "$dir/slow-create.pid"
    i=0
    while [ ! -f "$dir/go" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done
  fi
  out=""
  # jobs write into the test's private temp dir: as root, run them as root
  run_as=""
  [ "$(id -u)" -eq 0 ] && run_as="--job-user root --allow-root-jobs"
  pad=""
  [ -f "$dir/long-id" ] && pad=/$(printf '%0196d' 0)
  for name in $TIDE_NODE_NAMES; do
    mkdir -p "$dir/$name"
    if [ -f "$dir/bg-stdout" ]; then
      (while echo tick >&2; do sleep 0.1; done) &
      setsid "$TIDE_BIN" agent --server "$TIDE_SERVER" --name "$name" \
        --work "$dir/$name" --fake-gpus "$TIDE_FAKE_GPUS" --pool "$TIDE_POOL" $run_as \
        2>"$dir/$name.log" </dev/null &
    else
      setsid "$TIDE_BIN" agent --server "$TIDE_SERVER" --name "$name" \
        --work "$dir/$name" --fake-gpus "$TIDE_FAKE_GPUS" --pool "$TIDE_POOL" $run_as \
        >"$dir/$name.log" 2>&1 </dev/null &
    fi
    echo $! > "$dir/$name.pid"
    id="\"id\":\"vm-$name$pad\","
    [ -f "$dir/no-id" ] && id=""
    out="$out${out:+,}{$id\"name\":\"$name\",\"state\":\"creating\"}"
  done
  echo "$2 $TIDE_NODE_NAMES" >> "$dir/created"
  echo "{\"nodes\":[$out]}"
  if [ -f "$dir/fail-after" ] && [ "$(cat "$dir/fail-after")" -gt 0 ]; then
    echo $(( $(cat "$dir/fail-after") - 1 )) > "$dir/fail-after"
    echo "tagging failed" >&2
    exit 3
  fi
  ;;
delete)
  name=${2#vm-}
  name=${name%%/*}
  echo "$2" >> "$dir/deleted"
  if [ -f "$dir/hang-delete" ]; then
    echo '{"nodes":[]}'
    exec >&-
    sleep 1000
  fi
  [ -f "$dir/$name.pid" ] && kill "$(cat "$dir/$name.pid")" 2>/dev/null
  echo '{"nodes":[]}'
  ;;
list)
  echo "$2" >> "$dir/listed"
  grep SigIgn /proc/$$/status > "$dir/sigign"
  if [ -f "$dir/list-$2" ]; then cat "$dir/list-$2"
  elif [ -f "$dir/list" ]; then cat "$dir/list"
  else echo '{"nodes":[]}'; fi
  ;;
*) exit 2 ;;
esac
