"""DP-SGD's noise multiplier and Adult accuracy under the accounting in use (issue 30: discrete-noise accounting).

Adult-sized settings (the given split's 32,561 training rows, registry defaults: 20 epochs,
expected batch 256, 2 % of ε on the noisy count), δ = 1e-5, ε ∈ {0.3, 1, 3}: the sampling rate
and steps the model would choose for a noisy count of exactly 32,561, the noise multiplier σ
the calibration finds (and the seconds the count's and the steps' calibrations took, uncached), and ``dp_sgd_logistic``'s test
accuracy on the given split (median of ``--repetitions`` seeded fits). Run it on two trees to
compare accountings; the rows come from whichever ``dpcore`` is first on the path:

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

EPSILONS = (0.3, 1.0, 3.0)
DELTA = 1e-5
ADULT_ROWS = 32_561


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--seed", type=int, default=20242)
    args = parser.parse_args(argv)
    quiet_warnings()
    model = DPSGDClassifier()
    rate, steps = model._sampling(ADULT_ROWS, 20)
    train, test = load_adult()
    count_noise_for(1.0, DELTA)  # imports the accounting library, so the timings below are the calibrations'
    rows = []
    for epsilon in EPSILONS:
        calibrate_noise.cache_clear()
        count_noise_for.cache_clear()
        start = time.perf_counter()
        count = count_noise_for(model.count_share * epsilon, DELTA)
        sigma = calibrate_noise(epsilon, DELTA, rate, steps, count)
        seconds = time.perf_counter() - start
        accuracies = [
            fit_and_score("dp_sgd_logistic", train, test, epsilon, args.seed + rep)[0] for rep in range(args.repetitions)
        ]
        rows.append(
            {
                "ε": epsilon,
                "q": rate,
                "steps": steps,
                "σ": sigma,
                "ε of σ": epsilon_of(sigma, rate, steps, count, DELTA),
                "calibration (s)": seconds,
                "accuracy (median)": float(np.median(accuracies)),
                "accuracies": ", ".join(f"{a:.4f}" for a in accuracies),
            }
        )
    print(markdown_table(pd.DataFrame(rows), 4))


if __name__ == "__main__":
    main()
