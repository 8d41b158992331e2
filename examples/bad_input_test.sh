#!/usr/bin/env bash
# Every example, given what a user may mistype (a folder that does not exist yet, one that cannot
# exist, a missing data file, a bad flag), either does its job or ends with a message and a
# plain exit status: never an uncaught exception (status 134, SIGABRT) or a traceback.
set -euo pipefail
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
fail() { echo "bad_input_test: $1" >&2; exit 1; }

# expect STATUS PATTERN COMMAND...: the command exits with STATUS and its output matches PATTERN.
expect() {
  local want=$1 pattern=$2 out rc=0
  shift 2
  out=$("$@" 2>&1) || rc=$?
  [ "$rc" -eq "$want" ] || fail "$* exited with $rc, expected $want; it printed: $out"
  grep -qE -- "$pattern" <<<"$out" || fail "$* did not print /$pattern/; it printed: $out"
  if grep -q "Traceback\|terminate called" <<<"$out"; then fail "$* ended in an uncaught error"; fi
}

# A folder that does not exist yet (two levels) is created.
expect 0 "wrote safe.svg" examples/explain_mutation "$tmp/new/pictures"
[ -s "$tmp/new/pictures/stale.svg" ] || fail "explain_mutation did not write into a new folder"
# A folder below a regular file cannot be created: a message, status 2.
touch "$tmp/a_file"
expect 2 "cannot create the folder $tmp/a_file/pictures" examples/explain_mutation "$tmp/a_file/pictures"

# The Python twin, against the user build of the module.
export PYTHONPATH="$PWD/python" PYTHONDONTWRITEBYTECODE=1
# Under --config=asan the ASan runtime must come first (asan_python_env.sh).
source tests/python/asan_python_env.sh python/mutagrad/_C.so
expect 0 "" /usr/bin/python3 examples/explain_mutation.py "$tmp/py/new/pictures"
[ -s "$tmp/py/new/pictures/stale.svg" ] || fail "explain_mutation.py did not write into a new folder"
expect 2 "explain_mutation.py: .*a_file" /usr/bin/python3 examples/explain_mutation.py "$tmp/a_file/x"

expect 2 "cannot open the handwritten digits data set at /nonexistent/digits.csv.gz" \
  examples/train_digits --data /nonexistent/digits.csv.gz
expect 64 "unknown flag --bogus" examples/train_digits --bogus 1
expect 64 "flag --epochs needs a value" examples/train_digits --epochs
expect 64 "--epochs must be at least 1" examples/train_digits --epochs zero
expect 64 "--stop-after must be at least 1" examples/train_digits --stop-after 0
# A checkpoint that does not exist, or a file that is not one: a message, status 2.
expect 2 "--resume $tmp/none.pt: cannot read a train_digits checkpoint" \
  examples/train_digits --resume "$tmp/none.pt"
expect 2 "--resume $tmp/a_file: cannot read a train_digits checkpoint" \
  examples/train_digits --resume "$tmp/a_file"
# A checkpoint path below a regular file: the first save fails with the path, status 2.
expect 2 "train_digits: save: cannot create a temporary file beside '$tmp/a_file/x.pt'" \
  examples/train_digits --epochs 1 --checkpoint "$tmp/a_file/x.pt"
expect 2 "train_digits.py: cannot save the checkpoint: .*$tmp/a_file/x.pt" \
  /usr/bin/python3 examples/train_digits.py --epochs 1 --checkpoint "$tmp/a_file/x.pt"
expect 2 "train_digits.py: --resume $tmp/a_file: cannot read a train_digits checkpoint" \
  /usr/bin/python3 examples/train_digits.py --resume "$tmp/a_file"
expect 2 "train_digits.py: cannot open the handwritten digits data set at /nonexistent" \
  /usr/bin/python3 examples/train_digits.py --data /nonexistent/digits.csv.gz
echo "bad_input_test: ok"
