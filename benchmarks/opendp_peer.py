"""OpenDP's MST or AIM on integer-coded cells: the peer run of ``benchmarks/synthetic_aim.py --peers`` (issue 34).

This script runs in its own environment, because ``opendp[mbi]`` pins other versions of JAX and
Private-PGM than ours::

    python3.11 -m venv /tmp/opendp-venv
    /tmp/opendp-venv/bin/pip install 'opendp[mbi]==0.16.*' pandas   # pandas: needed beside it, not pulled in

It reads the training rows as cell codes (``cells.npy``, rows × columns) and each column's number
of cells, releases OpenDP's contingency table at ``ρ`` per row (``dp.unit_of(contributions=1)``,
add or remove one row: our copy's unit), and draws the copy twice: ``"round"`` (OpenDP's default,
which does not shuffle within groups) and ``"sample"``. Every column's cells are declared as keys,
so OpenDP reads no domain from the data and its δ is 0; OpenDP adds a null key to each column, and
a drawn null is written as an extra cell, ``size``, that the truth never holds (it counts as error).

OpenDP's MST can refuse a ρ: a share of its selection comes out one last digit above its budget, depending on
its noisy picks rather than on ρ's last bits. The release is then run again with fresh noise (and ρ a hair
lower), up to three times; the ρ used is written in the JSON beside the times, which include the refused
attempts, OpenDP's imports and both draws.

Usage: ``/tmp/opendp-venv/bin/python benchmarks/opendp_peer.py CELLS.npy OUT --sizes 8,9,… --rho R --method mst|aim``
(writes ``OUT-round.npy``, ``OUT-sample.npy`` and ``OUT.json``).
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np

#: How many ρ just below the one asked for are tried before giving up (40 steps of 1e-13 never helped where the
#: first was refused: the refusal is 1 ulp in its MST selection, whatever ρ's last bits).
ATTEMPTS = 3


def release(frame, names: list[str], sizes: list[int], rho: float, method: str):
    import opendp.prelude as dp

    context = dp.Context.compositor(
        data=frame,
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(rho=rho),
        split_evenly_over=1,
    )
    algorithm = dp.mbi.MST() if method == "mst" else dp.mbi.AIM()
    keys = {name: list(range(size)) for name, size in zip(names, sizes)}
    return context.query().contingency_table(keys=keys, algorithm=algorithm).release()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cells")
    parser.add_argument("out")
    parser.add_argument("--sizes", required=True, help="each column's number of cells, comma-separated")
    parser.add_argument("--rho", type=float, required=True)
    parser.add_argument("--method", choices=("mst", "aim"), required=True)
    args = parser.parse_args()

    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    cells = np.load(args.cells)
    sizes = [int(size) for size in args.sizes.split(",")]
    names = [f"c{i}" for i in range(len(sizes))]
    frame = pl.LazyFrame({name: cells[:, i].astype(np.int64) for i, name in enumerate(names)})
    started, cpu = time.perf_counter(), time.process_time()
    table = None
    for attempt in range(ATTEMPTS):
        # Whether a share rounds above its total is decided by the last bits of ρ: each attempt steps a little lower.
        rho = args.rho * (1 - attempt * 1e-13)
        try:
            table = release(frame, names, sizes, rho, args.method)
            break
        except dp.OpenDPException:
            if attempt == ATTEMPTS - 1:
                raise
    fitted = time.perf_counter() - started
    for draw in ("round", "sample"):
        copy = table.synthesize(method=draw)
        codes = np.column_stack([copy[name].fill_null(size).to_numpy() for name, size in zip(names, sizes)])
        np.save(f"{args.out}-{draw}.npy", codes.astype(np.int64))
    summary = {
        "rho": rho,
        "fit wall s": fitted,
        "wall s": time.perf_counter() - started,
        "CPU s": time.process_time() - cpu,
        "peak MB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "marginals measured": len(table.marginals.flatten()),
    }
    with open(f"{args.out}.json", "w", encoding="utf-8") as out:
        json.dump(summary, out)


if __name__ == "__main__":
    main()
