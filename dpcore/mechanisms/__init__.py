"""Vectorised DP mechanisms. Each states its ε and sensitivity in its docstring."""

from dpcore.mechanisms._base import MechanismCall, record_mechanism_calls
from dpcore.mechanisms.exponential import SELECTION_METHODS, Exponential
from dpcore.mechanisms.gaussian import Gaussian, zcdp_rho
from dpcore.mechanisms.geometric import Geometric
from dpcore.mechanisms.laplace import Laplace
from dpcore.mechanisms.median import GridMedian, Median
from dpcore.mechanisms.randomized_response import COIN_EPSILON, CoinRandomizedResponse, KaryRandomizedResponse
from dpcore.mechanisms.smooth_median import SmoothMedian
from dpcore.validation import RandomStateLike

COUNT_NOISES = ("laplace", "geometric")


def count_mechanism(kind: str, epsilon: float, random_state: RandomStateLike = None) -> Laplace | Geometric:
    """The mechanism that noises counts (sensitivity 1): ``"laplace"`` or ``"geometric"``."""
    if kind == "laplace":
        return Laplace(epsilon, 1.0, random_state)
    if kind == "geometric":
        return Geometric(epsilon, 1, random_state)
    raise ValueError(f"count noise must be one of {COUNT_NOISES}, got {kind!r}")


__all__ = [
    "COIN_EPSILON",
    "COUNT_NOISES",
    "SELECTION_METHODS",
    "CoinRandomizedResponse",
    "Exponential",
    "Gaussian",
    "Geometric",
    "KaryRandomizedResponse",
    "Laplace",
    "GridMedian",
    "Median",
    "MechanismCall",
    "SmoothMedian",
    "count_mechanism",
    "record_mechanism_calls",
    "zcdp_rho",
]
