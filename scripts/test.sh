#!/usr/bin/env bash
# Install the test dependencies into .venv (first run only), Debian's chromium for the browser
# tests, Java 17 for the Spark tests, PostgreSQL for the ledger's server tests and its JDBC driver for
# Spark's reads from PostgreSQL when they are missing,
# then lint, type-check the engine and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh requirements-dev.txt
if [[ ! -x /usr/bin/chromium ]]; then
  echo "Installing Debian's chromium for the browser tests..."
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
fi
if ! command -v java >/dev/null 2>&1; then
  echo "Installing Java 17 for the Spark tests..."
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && ! command -v initdb >/dev/null 2>&1; then
  echo "Installing PostgreSQL for the ledger's server tests (a throw-away cluster, started and stopped by the tests)..."
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq postgresql >/dev/null
fi
if [[ ! -f /usr/share/java/postgresql.jar ]]; then
  echo "Installing PostgreSQL's JDBC driver for Spark's reads from PostgreSQL..."
  sudo_cmd=""
  [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq libpostgresql-jdbc-java >/dev/null
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m mypy
# Two workers on two cores; --dist loadgroup keeps the Spark tests together on one of them.
.venv/bin/python -m pytest -n auto --dist loadgroup "$@"
