"""Kept for callers written before :mod:`dpcore.release` became a package.

The first ledger format's table fingerprint now lives in :mod:`dpcore.fingerprint`, the CSV
reader in :mod:`dpcore.csv_reading`; import them from there.
"""

from dpcore.fingerprint import Fingerprint

__all__ = ["Fingerprint"]
