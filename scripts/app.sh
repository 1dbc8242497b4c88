#!/usr/bin/env bash
# Install DP Studio into .venv (first run only) and open the app on the bundled sample data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh requirements.txt
exec .venv/bin/dpstudio "$@"
