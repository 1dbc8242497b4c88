#!/usr/bin/env bash
# Create .venv (once) and install a requirements file into it (again only when it changed).
set -euo pipefail
cd "$(dirname "$0")/.."
requirements="$1"
python=${PYTHON:-python3.11}
command -v "$python" >/dev/null 2>&1 || python=python3
if [[ ! -x .venv/bin/python ]]; then
  "$python" -m venv .venv
fi
stamp=".venv/.installed-$(basename "$requirements")"
digest=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
if [[ ! -f $stamp || $(cat "$stamp") != "$digest" ]]; then
  .venv/bin/python -m pip install --quiet --upgrade pip
  .venv/bin/python -m pip install --quiet -r "$requirements"
  echo "$digest" > "$stamp"
fi
