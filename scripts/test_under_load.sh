#!/usr/bin/env bash
# Run the README's test command N times in a row (default 3) while stress-ng keeps every core busy,
# to show the suite passes on a busy machine; prints each run's result and time.
set -uo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
shift || true
command -v stress-ng >/dev/null || { echo "stress-ng is missing: apt-get install stress-ng"; exit 2; }
stress-ng --cpu "$(nproc)" --timeout 0 --quiet &
stress=$!
trap 'kill $stress 2>/dev/null' EXIT
failed=0
for run in $(seq "$runs"); do
  start=$(date +%s)
  if bash scripts/test.sh "$@" >".ci-load-run-$run.log" 2>&1; then verdict=passed; else verdict=FAILED; failed=1; fi
  echo "run $run under load: $verdict in $(( $(date +%s) - start )) s (log: .ci-load-run-$run.log; $(tail -1 ".ci-load-run-$run.log"))"
done
exit $failed
