"""Backends: where a model's rows live and how their histograms are summed.

:class:`LocalRows` holds numpy arrays (the default, and what ``fit(X, y)`` uses);
:mod:`dpcore.backends.spark` sums the same histograms over a Spark table. Per-row randomness
is keyed (:mod:`dpcore.mechanisms.keyed`), so both give the same model and the same copy.
"""

from dpcore.backends.rows import BATCH_ROWS, FIXED_BITS, Job, LocalRows, Prepare, RowBatch, Rows, exact_bincount, fixed, unfixed

__all__ = ["BATCH_ROWS", "FIXED_BITS", "Job", "LocalRows", "Prepare", "RowBatch", "Rows", "exact_bincount", "fixed", "unfixed"]
