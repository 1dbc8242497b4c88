"""Adult at ε = 0.07: our boosting against S-GBDT's published 18.7 % test error (issue 33).

S-GBDT (Kaiser et al. 2024) reports 18.7 % test error on Adult at ε = 0.07 under (ε, δ)-DP
with subsampling and Rényi accounting. This runs our boosting on Adult's given split
(32,561 training rows, 16,281 test rows, the declared schema of ``sample_data/``) at that ε,
registry defaults, in both modes: pure ε (the default) and the labelled approximate mode at
δ = 1e-5 (Gaussian leaves, zCDP accounting); ``--seeds`` fits each, the median and the range
of test error.

    PYTHONPATH=. python benchmarks/adult_low_epsilon.py [--epsilon 0.07] [--seeds 10]
"""

from __future__ import annotations

import argparse

import numpy as np

from benchmarks._common import fit_and_score, load_adult, quiet_warnings

MODES = {"dp_boosting_clf": "pure ε", "dp_boosting_clf_approx": "(ε, δ = 1e-5)"}
TARGET_ERROR = 0.187


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=0.07)
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    quiet_warnings()
    train, test = load_adult()
    print(f"| mode | ε | fits | median test error | range | within {TARGET_ERROR:.1%} |")
    print("|---|--:|--:|--:|--:|:-:|")
    for key, mode in MODES.items():
        errors = np.array([1.0 - fit_and_score(key, train, test, args.epsilon, seed)[0] for seed in range(args.seeds)])
        median = float(np.median(errors))
        print(
            f"| {mode} | {args.epsilon:g} | {args.seeds} | {median:.1%} | {errors.min():.1%}–{errors.max():.1%} | "
            f"{'yes' if median <= TARGET_ERROR else 'no'} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
