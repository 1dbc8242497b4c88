"""MST against AIM, our two synthetic copies, on Adult at ε = 1 and 0.3 (issue 34).

Data: the 32,561 rows of sample_data/adult.csv with its declared schema and default plan (14
columns: numbers in 8 equal-width bins over their declared bounds, categories as declared,
``(missing)`` a cell of its own where a column may be missing; ``income`` the declared target).
Protocol, per method and ε (one run each, seed 0 for the split and the copies): a random 80 % of
the rows makes a copy with Gaussian noise at (ε, δ = 1e-6) per person under add/remove, as many
rows as the noisy count; then the mean total-variation distance from the truth of those rows of
all 14 one-way, all 91 two-way and 200 random three-way marginals (the same 200 for every run),
and the accuracy for ``income`` of a logistic regression on one-hot cells trained on the copy and
tested on the other 20 % of real rows (beside the same model trained on the real 80 %). Time:
the copy's wall clock and CPU seconds (the machine is shared: read wall clock as an upper bound;
the first copy of the process includes JAX's first compilations). AIM's time budget is counted in
the process's CPU seconds here (``clock=time.process_time``), so the machine's load does not decide
how many rounds it runs.

With ``--studied COLUMNS`` a third copy, ``AIM (declared)``, is AIM on the workload of those columns
studied together (every pair of them and each pair with the target,
:func:`~dpcore.synthetic.studied_together`), and every copy is also scored on that workload's
marginals (``declared TV``): what an owner who knows the buyer's questions gains by saying them.

With ``--peers PYTHON`` (a Python with ``opendp[mbi]``, see ``benchmarks/opendp_peer.py``) OpenDP 0.16's MST and
AIM make copies of the same training cells in the same run, at the ρ our copy spends (ρ-zCDP per row added
or removed, every column's cells declared as keys), each in its own process; both of its draws are scored
(``"round"``, its default, and ``"sample"``). ``--peer-minutes`` stops a peer that has used that many minutes of CPU
(default 30; counted like our AIM's budget, so the load does not decide how far it gets): its row then says so. The peer's time is its own process's, from the data frame to both draws written.

Figures are measured on raw data: owner's eyes only, nothing is released.

Run: ``PYTHONPATH=. nice -n 5 .venv/bin/python benchmarks/synthetic_aim.py [--quick] [--studied age,education,occupation]
[--peers /tmp/opendp-venv/bin/python]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._common import DATA, ROOT, adult_schema, mushroom_schema, nursery_schema
from dpcore.mechanisms.gaussian import zcdp_rho
from dpcore.release import default_plan
from dpcore.synthetic import studied_together, synthesize_table
from dpcore.synthetic.domain import copy_cells, encode, synthetic_columns
from dpcore.synthetic.preview import HOLDOUT, downstream_accuracy, shares, tv
from dpcore.tables.loading import read_csv_path

DELTA = 1e-6
TRIPLES = 200
PEER = Path(__file__).with_name("opendp_peer.py")
#: The public tables a run can use: Adult (the bundled sample), Nursery (9 columns, small enough for OpenDP's
#: AIM to finish) and Mushroom (23 columns, the widest public table we hold), each with its declared schema.
TABLES = {
    "adult": (ROOT / "sample_data" / "adult.csv", adult_schema),
    "nursery": (DATA / "nursery" / "nursery.csv", nursery_schema),
    "mushroom": (DATA / "mushroom" / "mushroom.csv", mushroom_schema),
}


def mean_tv(truth: np.ndarray, copy: np.ndarray, shape: tuple[int, ...], cliques: list[tuple[int, ...]]) -> float:
    return float(np.mean([tv(shares(truth, shape, cl), shares(copy, shape, cl)) for cl in cliques]))


@dataclass(frozen=True)
class Scoring:
    """How every copy is scored, ours and the peers' alike: the truth of the training rows, the held-out rows and
    the marginals compared (``declared`` may be empty)."""

    truth: np.ndarray
    held_out: np.ndarray
    target: int
    ones: list[tuple[int, ...]]
    pairs: list[tuple[int, ...]]
    triples: list[tuple[int, ...]]
    declared: list[tuple[int, ...]]

    def quality(self, copy: np.ndarray, shape: tuple[int, ...]) -> dict[str, float]:
        declared = (
            {f"declared TV ({len(self.declared)})": mean_tv(self.truth, copy, shape, self.declared)} if self.declared else {}
        )
        return {
            "1-way TV": mean_tv(self.truth, copy, shape, self.ones),
            "2-way TV": mean_tv(self.truth, copy, shape, self.pairs),
            f"3-way TV ({len(self.triples)})": mean_tv(self.truth, copy, shape, self.triples),
            **declared,
            "train-on-copy accuracy": downstream_accuracy(copy, self.held_out, shape, self.target),
        }


def finished_within(command: list[str], cpu_seconds: float) -> str:
    """Run ``command``; stop it once its process has used ``cpu_seconds`` of CPU (counted as our AIM's budget is,
    so the machine's load does not decide how far it gets). Reads Linux's ``/proc``. Says how it ended:
    ``"finished"``, ``"stopped"`` or ``"failed"``."""
    process = subprocess.Popen(command)
    ticks = os.sysconf("SC_CLK_TCK")
    while True:
        try:
            code = process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            fields = Path(f"/proc/{process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            if (int(fields[11]) + int(fields[12])) / ticks > cpu_seconds:
                process.kill()
                process.wait()
                return "stopped"
            continue
        return "failed" if code else "finished"


def peer_rows(python: str, minutes: float, scoring: Scoring, shape: tuple[int, ...], epsilon: float) -> list[dict]:
    """OpenDP's MST and AIM on ``truth`` at our copy's ρ, each draw scored as ours are (a drawn null is a cell of its own)."""
    wide = tuple(size + 1 for size in shape)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        cells = Path(folder) / "cells.npy"
        np.save(cells, scoring.truth)
        for method in ("mst", "aim"):
            out = Path(folder) / method
            command = [python, str(PEER), str(cells), str(out), "--sizes", ",".join(map(str, shape))]
            command += ["--rho", repr(zcdp_rho(epsilon, DELTA)), "--method", method]
            label = f"OpenDP {method.upper()}"
            ended = finished_within(command, 60 * minutes)
            if ended != "finished":
                said = f"stopped after {minutes:g} CPU min" if ended == "stopped" else "refused or failed (its error above)"
                rows.append({"ε": epsilon, "method": f"{label}: {said}"})
                continue
            ran = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
            for draw in ("round", "sample"):
                copy = np.load(f"{out}-{draw}.npy")
                rows.append(
                    {
                        "ε": epsilon,
                        "method": f"{label} ({draw})",
                        **scoring.quality(copy, wide),
                        "marginals measured": ran["marginals measured"],
                        "wall s": ran["wall s"],
                        "CPU s": ran["CPU s"],
                        "peak MB": ran["peak MB"],
                    }
                )
            print(f"ε = {epsilon:g} {label} done: {rows[-1]} (ρ {ran['rho']!r})", file=sys.stderr, flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="ε = 1 only")
    parser.add_argument("--epsilons", default="1,0.3", help="which ε, comma-separated (default: 1,0.3)")
    parser.add_argument("--methods", default="mst,aim", help="which copies, comma-separated (default: mst,aim)")
    parser.add_argument("--studied", default="", help="columns a buyer studies together: adds AIM on their workload")
    parser.add_argument("--peers", default="", help="a Python with opendp[mbi]: adds OpenDP's MST and AIM")
    parser.add_argument("--peer-minutes", type=float, default=30.0, help="stop a peer after this many CPU minutes")
    parser.add_argument("--table", choices=sorted(TABLES), default="adult", help="which public table (default: adult)")
    args = parser.parse_args()
    path, make_schema = TABLES[args.table]
    frame, _ = read_csv_path(path)
    schema = make_schema()
    plan = default_plan(schema)
    columns = synthetic_columns(schema, plan)
    shape = tuple(c.size for c in columns)
    target = [c.name for c in columns].index(schema.target.name)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(frame))
    cut = int(round(len(frame) * (1 - HOLDOUT)))
    train = frame.iloc[order[:cut]].reset_index(drop=True)
    truth = encode(train, columns, rng)
    held_out = encode(frame.iloc[order[cut:]].reset_index(drop=True), columns, rng)
    d = len(shape)
    ones = [(i,) for i in range(d)]
    pairs = list(itertools.combinations(range(d), 2))
    all_triples = list(itertools.combinations(range(d), 3))
    picked = np.random.default_rng(1).choice(len(all_triples), min(TRIPLES, len(all_triples)), replace=False)
    triples = [all_triples[i] for i in picked]
    names = [c.name for c in columns]
    studied = [name.strip() for name in args.studied.split(",") if name.strip()]
    workload = studied_together(studied, schema.target.name) if studied else None
    declared = [tuple(sorted(names.index(name) for name in entry)) for entry in workload or []]
    methods = args.methods.split(",") + (["aim-declared"] if workload else [])
    scoring = Scoring(truth, held_out, target, ones, pairs, triples, declared)
    rows = []
    for epsilon in (1.0,) if args.quick else [float(e) for e in args.epsilons.split(",")]:
        for method in methods:
            started, cpu = time.perf_counter(), time.process_time()
            copy = synthesize_table(
                train,
                schema,
                plan,
                epsilon=epsilon,
                delta=DELTA,
                random_state=0,
                method="aim" if method == "aim-declared" else method,
                workload=workload if method == "aim-declared" else None,
                clock=time.process_time,
            )
            seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            cells = copy_cells(copy.table, columns)
            rows.append(
                {
                    "ε": epsilon,
                    "method": "AIM (declared)" if method == "aim-declared" else method.upper(),
                    **scoring.quality(cells, shape),
                    "marginals measured": len(copy.report["measured"]),
                    "wall s": seconds,
                    "CPU s": cpu,
                }
            )
            print(f"ε = {epsilon:g} {method} done: {rows[-1]}", file=sys.stderr, flush=True)
        if args.peers:
            rows.extend(peer_rows(args.peers, args.peer_minutes, scoring, shape, epsilon))
    real = downstream_accuracy(truth, held_out, shape, target)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"### {args.table} ({len(train):,} training rows, {d} columns): MST vs AIM at (ε, δ = {DELTA:g})\n")
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".3f"))
    print(f"\nReal rows' accuracy (reference): {real:.3f}. Peak memory of the whole run: {peak:,.0f} MB.")


if __name__ == "__main__":
    main()
