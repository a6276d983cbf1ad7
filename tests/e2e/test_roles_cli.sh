#!/usr/bin/env bash
# Every role reads its options with one parser (src/cli/args.c), so --help,
# an unknown option, a missing value and a bad number read the same in each:
#   tide ROLE: MESSAGE
#   (see 'tide ROLE --help')
# with exit status 2 (0 for --help, its text on stdout). Nothing is started:
# each case fails before a role opens a port or a directory.
set -u
tide=${TIDE_BIN:?TIDE_BIN must point at the tide binary}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}

# expect ROLE STATUS WANTED_STDERR ARGS...
expect() {
  local role=$1 status=$2 want=$3
  shift 3
  "$tide" "$role" "$@" >out.txt 2>err.txt
  local rc=$?
  [ "$rc" = "$status" ] || fail "tide $role $*: exit $rc, wanted $status ($(cat err.txt))"
  printf '%s' "$want" | cmp -s - err.txt ||
    fail "tide $role $*: stderr was [$(cat err.txt)], wanted [$want]"
}

# ROLE, an option that takes a value, and one that takes a number.
roles="up:--port:--agents server:--listen:--heartbeat-ms agent:--server:--cpus
sim:--trace:--synthetic jobs:--state:--limit"
for spec in $roles; do
  IFS=: read -r role valued numeric <<<"$spec"
  "$tide" "$role" --help >out.txt 2>err.txt
  rc=$?
  [ "$rc" = 0 ] || fail "tide $role --help: exit $rc"
  grep -q "^usage: tide $role" out.txt || fail "tide $role --help: no usage line on stdout"
  [ -s err.txt ] && fail "tide $role --help wrote to stderr: $(cat err.txt)"
  see="(see 'tide $role --help')"
  expect "$role" 2 "tide $role: unknown option '--foo'
$see
" --foo
  expect "$role" 2 "tide $role: unknown option '--foo'
$see
" --foo=1
  expect "$role" 2 "tide $role: $valued needs a value
$see
" "$valued"
  expect "$role" 2 "tide $role: unexpected argument 'stray'
$see
" stray
  # A bad number names the flag first, in every role.
  "$tide" "$role" "$numeric" x >out.txt 2>err.txt
  rc=$?
  [ "$rc" = 2 ] || fail "tide $role $numeric x: exit $rc"
  head -1 err.txt | grep -q "^tide $role: $numeric: 'x' is not a whole number" ||
    fail "tide $role $numeric x: stderr was [$(cat err.txt)]"
  tail -1 err.txt | grep -qxF "$see" || fail "tide $role $numeric x: no pointer to --help"
done
# Flags without a value refuse one the same way.
expect sim 2 "tide sim: --json takes no value
(see 'tide sim --help')
" --json=1
expect server 2 "tide server: --check-config takes no value
(see 'tide server --help')
" --check-config=yes
[ -e .tide ] || [ -e tide-data ] || [ -e tide-agent ] && fail "a refused command created files"

[ "$failed" = 0 ] && echo "ok: every role's options read alike"
exit "$failed"
