"""Kept for callers written before :mod:`dpcore.release` became a package.

The report is now :mod:`dpcore.release.report`, the estimator's arithmetic
:mod:`dpcore.release.estimator` and the verdicts :mod:`dpcore.release.usefulness`; import
them from there.
"""

from dpcore.release.estimator import consistent_shares, frequencies_from_counts, joint_from_counts, mean_from_sum
from dpcore.release.report import build_report, describe_entry, report_markdown
from dpcore.release.usefulness import rating, share_error, verdict

__all__ = [
    "build_report", "consistent_shares", "describe_entry", "frequencies_from_counts", "joint_from_counts", "mean_from_sum",
    "rating", "report_markdown", "share_error", "verdict",
]
