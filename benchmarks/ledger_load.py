"""The budget ledger under load and under kills, on SQLite and on PostgreSQL (issue 31).

**Load.** Four spawned processes of eight threads each (a team server's app processes and their
browser sessions) charge one dataset at once until it is spent: each session makes ``--attempts``
charges of ε = 0.03 against a total of 1, so 33 fit and the rest must be refused. Reported per
database, median of ``--runs`` runs: charges attempted, accepted and refused; the overspend
(Σ recorded ε − total, never above 0); refusals without the sentence (0); the wall time of the
whole load divided by the charges attempted, and the median time one charge took in its session
(check, 1 ms of work, re-check and write) and the slowest; and the time per charge of one
session with the ledger to itself.

**Kills.** ``--kills`` times, a process charges 0.01 and pays for a stored copy in the same
transaction and is killed with SIGKILL at a random moment in it (while waiting on the lock,
after the spend is written, after the copy is, or after the commit). Each time the ledger must
hold both the spend and its copy or neither.

The PostgreSQL server is a throw-away cluster (Debian's ``postgresql``, tests/postgres_support.py).
Nothing is released; no data is read. Results: results/ledger_load.{md,csv}.
Run: ``PYTHONPATH=. .venv/bin/python benchmarks/ledger_load.py``
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from contextlib import closing
from decimal import Decimal
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from postgres_support import PostgresServer, server_programs  # noqa: E402

from benchmarks._common import RESULTS, markdown_table  # noqa: E402
from dpcore.budget.accountant import BudgetLedger, Charge  # noqa: E402
from dpcore.budget.ledger_db import connect  # noqa: E402
from dpcore.exceptions import BudgetExceededError  # noqa: E402

DATASET = "shared"
PROCESSES, SESSIONS = 4, 8
CHARGE_EPSILON, TOTAL = 0.03, 1.0


def _sessions(path: str, attempts: int, barrier, results) -> None:
    """One app process: ``SESSIONS`` threads charging; puts (accepted, refused, refusals without the sentence, times)."""
    outcomes: list[tuple[str, float]] = []
    lock = threading.Lock()
    start = threading.Barrier(SESSIONS)

    def session(i: int) -> None:
        ledger = BudgetLedger(DATASET, path=path)
        start.wait()
        for attempt in range(attempts):
            began = time.perf_counter()
            try:
                with ledger.charging(Charge(f"process {os.getpid()} session {i} charge {attempt}", CHARGE_EPSILON)):
                    time.sleep(0.001)
                outcome = "ok"
            except BudgetExceededError as refusal:
                outcome = "refused" if "does not fit in what is left" in str(refusal) else "other"
            with lock:
                outcomes.append((outcome, time.perf_counter() - began))

    barrier.wait()
    threads = [threading.Thread(target=session, args=(i,)) for i in range(SESSIONS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    results.put(outcomes)


def load(path: str, attempts: int) -> dict[str, float]:
    BudgetLedger(DATASET, total_epsilon=TOTAL, path=path)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(PROCESSES + 1), context.Queue()
    processes = [context.Process(target=_sessions, args=(path, attempts, barrier, results)) for _ in range(PROCESSES)]
    for process in processes:
        process.start()
    barrier.wait()  # every process has imported the engine: time the charging only
    began = time.perf_counter()
    outcomes = [outcome for _ in processes for outcome in results.get(timeout=600)]
    wall = time.perf_counter() - began
    for process in processes:
        process.join()
    with closing(connect(path)) as conn:
        recorded = sum(
            (Decimal(e) for (e,) in conn.execute("SELECT epsilon FROM spends WHERE dataset_id = ?", (DATASET,))), Decimal(0)
        )
    kinds = [kind for kind, _ in outcomes]
    return {
        "attempted": len(outcomes),
        "accepted": kinds.count("ok"),
        "refused": kinds.count("refused"),
        "refused without the sentence": kinds.count("other"),
        "overspend ε": float(max(recorded - Decimal(str(TOTAL)), Decimal(0))),
        "wall ms per charge attempted": 1000 * wall / len(outcomes),
        "median ms per charge in its session": 1000 * statistics.median(seconds for _, seconds in outcomes),
        "slowest ms": 1000 * max(seconds for _, seconds in outcomes),
    }


def alone(path: str, charges: int = 30) -> float:
    """Milliseconds per charge for one session with the ledger to itself (check, re-check and write)."""
    ledger = BudgetLedger(DATASET, total_epsilon=TOTAL, path=path)
    ledger.spend("warm-up", 0.001)  # the connection and the tables, made once
    began = time.perf_counter()
    for i in range(charges):
        with ledger.charging(Charge(f"alone {i}", 0.001)):
            pass
    return 1000 * (time.perf_counter() - began) / charges


def _charge_with_copy(path: str, ready) -> None:
    ledger = BudgetLedger(DATASET, path=path)

    def store_copy(conn) -> None:
        conn.execute(
            "INSERT INTO releases (key, dataset_id, payload, report, created, content) VALUES (?, ?, ?, ?, ?, ?)",
            (f"{DATASET}/{uuid.uuid4()}", DATASET, b"", "{}", "now", "0" * 64),
        )

    ready.set()
    while True:
        with ledger.charging(Charge("killed at random", 0.01)) as paid:
            paid.alongside = store_copy


def kills(path: str, count: int, seed: int) -> dict[str, float]:
    """Kill a charging process ``count`` times at random; count ledgers holding a spend without its copy or back."""
    BudgetLedger(DATASET, total_epsilon=1000.0, path=path)
    context, rng = multiprocessing.get_context("spawn"), random.Random(seed)
    torn = 0
    for _ in range(count):
        ready = context.Event()
        process = context.Process(target=_charge_with_copy, args=(path, ready))
        process.start()
        ready.wait(timeout=120)
        time.sleep(rng.uniform(0.0, 0.2))
        os.kill(process.pid, signal.SIGKILL)
        process.join()
        with closing(connect(path)) as conn:
            spends = conn.execute("SELECT COUNT(*) FROM spends WHERE label = 'killed at random'").fetchone()[0]
            copies = conn.execute("SELECT COUNT(*) FROM releases").fetchone()[0]
        torn += spends != copies
    with closing(connect(path)) as conn:
        spends = conn.execute("SELECT COUNT(*) FROM spends").fetchone()[0]
    return {"processes killed": count, "charges committed before a kill": spends, "spends without their copy or back": torn}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--attempts", type=int, default=2, help="charges per session (default 2: 64 in all)")
    parser.add_argument("--kills", type=int, default=10)
    args = parser.parse_args()
    programs = server_programs()
    if programs is None:
        sys.exit("PostgreSQL's server programs are not installed: apt-get install postgresql")
    server = PostgresServer(programs)
    rows, kill_rows = [], []
    try:
        server.start()
        with tempfile.TemporaryDirectory() as folder:
            for database in ("SQLite", "PostgreSQL"):
                runs = []
                for run in range(args.runs):
                    path = str(Path(folder) / f"load{run}.sqlite3") if database == "SQLite" else server.fresh_ledger()
                    runs.append(load(path, args.attempts))
                median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
                lone = statistics.median(
                    alone(str(Path(folder) / f"alone{run}.sqlite3") if database == "SQLite" else server.fresh_ledger())
                    for run in range(args.runs)
                )
                rows.append({"database": database, "runs": args.runs, **median, "ms per charge, one session alone": lone})
                path = str(Path(folder) / "kills.sqlite3") if database == "SQLite" else server.fresh_ledger()
                kill_rows.append({"database": database, **kills(path, args.kills, seed=2026)})
                print(rows[-1], kill_rows[-1], flush=True)
    finally:
        server.stop()
    frame, killed = pd.DataFrame(rows), pd.DataFrame(kill_rows)
    RESULTS.mkdir(exist_ok=True)
    frame.to_csv(RESULTS / "ledger_load.csv", index=False)
    text = markdown_table(frame) + "\n\n" + markdown_table(killed) + "\n"
    (RESULTS / "ledger_load.md").write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
