#!/usr/bin/env bash
# The clock-dependent tests on three days: today, 400 days from now, and a start five minutes
# before Berlin's spring-forward (01:00 UTC on 2027-03-28).  Every clock a test sets is relative
# to the real now, so all three must pass.  Needs Debian's `faketime` (apt-get install faketime).
#
#   bash bench/any_day.sh [PYTEST ARGS...]     (default: the clock-dependent modules)
#
# The tests hand the faked clock (LD_PRELOAD, FAKETIME*) to the bot, workers and CLI they start
# (tests/faked_clock.py), so the whole system lives on the faked day.  Notes on libfaketime
# 0.9.10 (Debian 12), measured here:
# - FAKETIME_DONT_FAKE_MONOTONIC=1 makes Python's time.sleep() fail with EINVAL (try
#   `FAKETIME_DONT_FAKE_MONOTONIC=1 faketime -f +400d python3 -c 'import time; time.sleep(.1)'`),
#   which the worker pool and subprocess timeouts use; so both runs fake the monotonic clock
#   too, shifted by the same amount in every process, which keeps every interval real.
# - `faketime -f '@DATE'` restarts the fake clock in every child process (the bot and its workers
#   would run behind the test), so the DST run uses the wrapper's start-at form, `faketime 'DATE'`,
#   whose children share one clock.
set -uo pipefail
cd "$(dirname "$0")/.."
command -v faketime >/dev/null || { echo "faketime is not installed: apt-get install faketime" >&2; exit 2; }
python=.venv/bin/python
[ -x "$python" ] || { echo "no .venv: run the README's test command once first" >&2; exit 2; }
if [ "$#" -eq 0 ]; then
  set -- tests/bot tests/progress tests/system/test_clock.py tests/bot/test_schedule.py
fi
pytest=("$python" -m pytest -q -p no:cacheprovider "$@")

failed=0
run() {
  local name=$1; shift
  echo "== $name: $("$@" date -u '+%F %T %Z')"
  if "$@" "${pytest[@]}"; then echo "== $name: passed"; else echo "== $name: FAILED"; failed=1; fi
}
run "today" env
run "+400 days" env faketime -f '+400d'
run "before a DST change" env TZ=UTC faketime '2027-03-28 00:55:00'
exit "$failed"
