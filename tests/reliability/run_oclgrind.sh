#!/bin/sh
# Runs the Oclgrind sweep (the program given, or build/tests/reliability's) under
# Oclgrind's checks; fails when the sweep fails or Oclgrind reports anything.
# .ci/reliability runs both passes with a summary; this is the quick way by hand.
set -u
sweep=${1:-build/tests/reliability/clnorm_oclgrind_sweep}
shift 2>/dev/null
log=$(mktemp)
status=0
oclgrind --data-races --check-api --log "$log" "$sweep" "$@" || status=1
if [ -s "$log" ]; then cat "$log"; status=1; fi
oclgrind --data-races --uninitialized --check-api --build-options -cl-opt-disable \
    --log "$log" "$sweep" "$@" || status=1
if [ -s "$log" ]; then cat "$log"; status=1; fi
rm -f "$log"
exit $status
