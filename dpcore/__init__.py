"""dpcore: the differential-privacy engine behind DP Studio (no UI code here)."""

__version__ = "0.1.0"
