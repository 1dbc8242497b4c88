#!/usr/bin/env bash
# Create .venv (once), install a requirements file into it and DP Studio itself in editable mode,
# so `dpstudio` and `dpcore` are on .venv/bin (again only when a requirements file or pyproject.toml changed).
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="$1"
python=${PYTHON:-python3.11}
command -v "$python" >/dev/null 2>&1 || python=python3
if [[ ! -x .venv/bin/python ]]; then
  "$python" -m venv .venv
fi
stamp=".venv/.installed-$(basename "$requirements")"
digest=$(cat requirements*.txt pyproject.toml | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$digest" ]]; then
  # pip and setuptools talk a lot (index locations a machine's pip settings name, build-backend
  # notes); their words go to a log that is shown only when an install fails.
  echo "Installing $(basename "$requirements") into .venv (the first time takes a few minutes)..."
  log=.venv/install.log
  if ! { .venv/bin/python -m pip install --quiet --upgrade pip &&
         .venv/bin/python -m pip install --quiet -r "$requirements" &&
         .venv/bin/python -m pip install --quiet --no-deps -e .; } >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "The install failed; the whole log is $log." >&2
    exit 1
  fi
  echo "$digest" > "$stamp"
fi
