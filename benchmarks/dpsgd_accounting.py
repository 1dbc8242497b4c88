"""DP-SGD's noise multiplier and Adult accuracy under the accounting in use, with 20 passes and with ``epochs="auto"``.

Adult-sized settings (the given split's 32,561 training rows, registry defaults: expected batch
256, 2 % of ε on the noisy count), δ = 1e-5, ε ∈ {0.1, 0.3, 0.5, 1, 3}: for a noisy count of
exactly 32,561, the sampling rate and steps of 20 passes, the noise multiplier σ the calibration
finds and the seconds the count's and the steps' calibrations took (uncached); then the passes
``epochs="auto"`` chooses, its σ and the seconds its whole choice took (six candidates,
uncached). Accuracy is ``dp_sgd_logistic``'s on the given test split (median of
``--repetitions`` seeded fits). Run it on two trees to compare accountings; the rows come from
whichever ``dpcore`` is first on the path (a tree without ``epochs="auto"`` gives the 20-pass
columns only):

    PYTHONPATH=. nice -n 5 .venv/bin/python benchmarks/dpsgd_accounting.py
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import fit_and_score, load_adult, markdown_table, quiet_warnings  # noqa: E402

from dpcore.models import DPSGDClassifier  # noqa: E402
from dpcore.models._dpsgd_accounting import calibrate_noise, count_noise_for, epsilon_of  # noqa: E402

try:
    from dpcore.models._dpsgd_accounting import choose_schedule  # noqa: F401  (present where "auto" is)

    AUTO = True
except ImportError:
    AUTO = False

EPSILONS = (0.1, 0.3, 0.5, 1.0, 3.0)
DELTA = 1e-5
ADULT_ROWS = 32_561
FIXED_EPOCHS = 20


def _uncached() -> None:
    calibrate_noise.cache_clear()
    count_noise_for.cache_clear()


def _accuracy(train, test, epsilon: float, params: dict, args: argparse.Namespace) -> list[float]:
    return [fit_and_score("dp_sgd_logistic", train, test, epsilon, args.seed + rep, params)[0] for rep in range(args.repetitions)]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20242)
    args = parser.parse_args(argv)
    quiet_warnings()
    train, test = load_adult()
    count_noise_for(1.0, DELTA)  # imports the accounting library, so the timings below are the calibrations'
    rows = []
    for epsilon in EPSILONS:
        model = DPSGDClassifier(epsilon=epsilon, epochs=FIXED_EPOCHS)
        rate, steps = model._sampling(ADULT_ROWS, FIXED_EPOCHS) if AUTO else model._sampling(ADULT_ROWS)
        _uncached()
        start = time.perf_counter()
        count = count_noise_for(model.count_share * epsilon, DELTA)
        sigma = calibrate_noise(epsilon, DELTA, rate, steps, count)
        seconds = time.perf_counter() - start
        fixed = _accuracy(train, test, epsilon, {"epochs": FIXED_EPOCHS}, args)
        row = {
            "ε": epsilon,
            "q": rate,
            "steps (20 passes)": steps,
            "σ (20 passes)": sigma,
            "ε of σ": epsilon_of(sigma, rate, steps, count, DELTA),
            "calibration (s)": seconds,
            "accuracy, 20 passes": float(np.median(fixed)),
        }
        if AUTO:
            auto_model = DPSGDClassifier(epsilon=epsilon)
            _uncached()
            start = time.perf_counter()
            count = count_noise_for(auto_model.count_share * epsilon, DELTA)
            epochs, auto_rate, auto_steps, auto_sigma = auto_model._schedule(ADULT_ROWS, count)
            auto_seconds = time.perf_counter() - start
            auto = _accuracy(train, test, epsilon, {}, args)
            row |= {
                "auto: passes": epochs,
                "auto: steps": auto_steps,
                "auto: σ": auto_sigma,
                "auto: ε of σ": epsilon_of(auto_sigma, auto_rate, auto_steps, count, DELTA),
                "auto: choice (s)": auto_seconds,
                "accuracy, auto": float(np.median(auto)),
                "accuracies, auto": ", ".join(f"{a:.4f}" for a in auto),
            }
        row["accuracies, 20 passes"] = ", ".join(f"{a:.4f}" for a in fixed)
        rows.append(row)
        print(f"ε = {epsilon} done", file=sys.stderr, flush=True)
    print(markdown_table(pd.DataFrame(rows), 4))


if __name__ == "__main__":
    main()
