"""Where a synthetic copy's time goes: MST's fit and draw on Adult, timed apart, twice in one process.

The measurement (ε = 1, δ = 1e-6, the default plan, seed ``--seed``) is made once; then Private-PGM's fit
(1,000 mirror-descent steps) and a draw of as many rows as the table's are timed, in wall clock and CPU
seconds, and again in the same process (the same graph: JAX's in-process caches). ``--width N`` makes the
table Adult widened to N columns (:func:`benchmarks.wide_table.wide_adult`; its first 2,700 rows past 40
columns, the shape of the issue's house-sales table). Set ``XLA_FLAGS`` or ``DPSTUDIO_JAX_CACHE`` in the
environment to compare compiler settings and the persistent cache (run twice with the cache on: the
second process reads what the first wrote).

Run: ``PYTHONPATH=. nice -n 5 .venv/bin/python benchmarks/synthetic_steps.py [--seed N] [--width N]``
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from benchmarks._common import ROOT, adult_schema
from benchmarks.wide_table import wide_adult
from dpcore.release import default_plan
from dpcore.synthetic.budget import Calibration
from dpcore.synthetic.domain import encode, synthetic_columns
from dpcore.synthetic.measure import measure
from dpcore.synthetic.model import draw, estimate, private_pgm
from dpcore.tables.loading import read_csv_path


class Compiles(logging.Handler):
    """Counts JAX's compilations and their seconds, from its own log lines (``jax_log_compiles``)."""

    def __init__(self) -> None:
        super().__init__()
        self.count, self.seconds = 0, 0.0

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"Finished XLA compilation of \S+ in ([0-9.e-]+) sec", record.getMessage())
        if found:
            self.count += 1
            self.seconds += float(found.group(1))


def timed(label: str, step: Callable[[], Any], compiles: Compiles) -> Any:
    wall, cpu = time.perf_counter(), time.process_time()
    count, seconds = compiles.count, compiles.seconds
    result = step()
    print(
        f"{label}: {time.perf_counter() - wall:.1f} s wall clock, {time.process_time() - cpu:.1f} s CPU; "
        f"{compiles.count - count} programs compiled in {compiles.seconds - seconds:.1f} s",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--width", type=int, default=0, help="Adult widened to this many columns (default: Adult's own)")
    args = parser.parse_args()
    private_pgm()
    import jax

    jax.config.update("jax_log_compiles", True)
    compiles = Compiles()
    logging.getLogger("jax").addHandler(compiles)
    logging.getLogger("jax").propagate = False  # counted, not printed
    if args.width:
        frame, schema = wide_adult(args.width, rows=2700 if args.width > 40 else None)
    else:
        frame, schema = read_csv_path(ROOT / "sample_data" / "adult.csv")[0], adult_schema()
    columns = synthetic_columns(schema, default_plan(schema))
    rng = np.random.default_rng(args.seed)
    shape = tuple(c.size for c in columns)
    calibration = Calibration(1.0, 1e-6, "gaussian", "add/remove", 1, len(columns), anchored=True)
    anchor = [c.name for c in columns].index(schema.target.name)
    print(f"{len(frame):,} rows, {len(columns)} columns", flush=True)
    measurements = timed(
        "measure", lambda: measure(encode(frame, columns, rng), shape, calibration, rng, anchor=anchor), compiles
    )
    for run in ("first", "again"):
        # Waited for: JAX would otherwise run the steps on while the draw's time is counted.
        model = timed(f"fit ({run})", lambda: jax.block_until_ready(estimate(measurements, shape)), compiles)
        timed(f"draw ({run})", lambda: draw(model, shape, len(frame), np.random.default_rng(1)), compiles)  # noqa: B023 (called at once)


if __name__ == "__main__":
    main()
