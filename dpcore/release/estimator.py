"""The buyer's side: reading a released file and estimating the true shares and means.

The functions take the report's entry of a column (its mechanism's parameters, see
:mod:`dpcore.release.report`); the arithmetic is shared by the in-memory estimates and
:func:`estimate_release`, which reads a file of any size in chunks.
"""

from __future__ import annotations

import collections
import io
import math
import os
from collections.abc import Iterable
from pathlib import Path
from statistics import NormalDist
from typing import IO, Any, TypeAlias

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from dpcore.exceptions import DataError
from dpcore.i18n import _
from dpcore.mechanisms import CoinRandomizedResponse, KaryRandomizedResponse
from dpcore.release.columns import resolve
from dpcore.release.contributions import person_bound, person_keys
from dpcore.release.plan import RANDOMISED, ReleasePlan
from dpcore.tables.csv_reading import DEFAULT_CHUNKSIZE
from dpcore.tables.schema import Schema

#: Where a released file is read from: a path (a file, or the folder of a copy in parts), its bytes, or a binary file object.
ReleaseSource: TypeAlias = str | os.PathLike[str] | bytes | IO[bytes]
#: A copy released in parts (on Spark) is a folder: this header file, then the parts in name order.
HEADER_FILE = "header.csv"


def part_file(part: int, suffix: str = "csv") -> str:
    """The name of a copy's part ``part`` (name order is the copy's row order)."""
    return f"part-{part:05d}.{suffix}"


def copy_parts(folder: str | os.PathLike[str]) -> list[Path]:
    """The files of a copy in parts, in the order that joins them into the released file."""
    folder = Path(folder)
    if not (folder / HEADER_FILE).is_file():
        raise DataError(_("The folder '{name}' is not a released copy: it has no header.csv.").format(name=folder.name))
    return [folder / HEADER_FILE, *sorted(folder.glob("part-*.csv"))]


class JoinedFiles(io.RawIOBase):
    """Files read one after the other as one stream (a copy's header and parts)."""

    def __init__(self, paths: list[Path]) -> None:
        super().__init__()
        self.paths = list(paths)
        self.handle: io.BufferedReader | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while self.paths or self.handle is not None:
            if self.handle is None:
                self.handle = open(self.paths.pop(0), "rb")  # noqa: SIM115 (closed when read to its end)
            count = self.handle.readinto(buffer)
            if count:
                return count
            self.handle.close()
            self.handle = None
        return 0

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
        super().close()


def _opened(source: ReleaseSource) -> str | os.PathLike[str] | IO[bytes]:
    """``source`` as pandas reads it: bytes as a file object, a copy's folder as its joined parts."""
    if isinstance(source, bytes):
        return io.BytesIO(source)
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        return io.BufferedReader(JoinedFiles(copy_parts(source)))
    return source


def read_release(source: ReleaseSource, report: dict[str, Any] | None = None) -> pd.DataFrame:
    """Read a released file (or a copy's folder of parts) as written: text stays text; Laplace columns become numbers."""
    numbers = [e["header"] for e in (report or {}).get("columns", []) if e["mechanism"] == "laplace"]
    source = _opened(source)
    dtypes = collections.defaultdict(lambda: str, dict.fromkeys(numbers, float))
    try:
        return pd.read_csv(source, dtype=dtypes, keep_default_na=False, na_filter=False)
    except ValueError:  # a damaged number column: read as text, then convert what can be converted
        if hasattr(source, "seek"):
            source.seek(0)
        frame = pd.read_csv(source, dtype=str, keep_default_na=False, na_filter=False)
        for header in (h for h in numbers if h in frame.columns):
            frame[header] = pd.to_numeric(frame[header], errors="coerce")
        return frame


def report_entry(report: dict[str, Any], column: str) -> dict[str, Any]:
    """The report's entry for a column (by its name or its header in the file)."""
    for entry in report.get("columns", []):
        if column in (entry["header"], entry["column"]):
            return entry
    raise KeyError(column)


def estimate_column(released: pd.Series, entry: dict[str, Any], confidence: float = 0.95) -> pd.DataFrame:
    """The buyer's unbiased estimates for one released column, from its report entry.

    Randomized-response columns: the true share of every category,
    ``π̂_j = (λ̂_j − q)/(p − q)``, with the standard error of that estimate of this table's share,
    ``√((π p(1−p) + (1−π) q(1−q))/n)/(p−q)`` (``π`` clipped to [0, 1]), and a normal interval.
    Laplace columns: the mean of the clipped values (the plain mean of the released values),
    standard error ``b√2/√n``. Columns of the result: ``category, estimate, std_error, ci_lower,
    ci_upper, consistent`` (``category`` is ``"mean"`` for a Laplace column).

    ``consistent`` holds estimates that are a proper distribution: the maximum-likelihood shares
    under the randomisation, constrained to sum to 1 and stay in [0, 1]
    (:func:`consistent_shares`, computed exactly rather than by EM). They
    equal ``estimate`` whenever every unbiased share already lies in [0, 1]; otherwise they are
    slightly biased (a share near 0 comes out a little too high on average), so the standard
    error and the interval belong to ``estimate``. The MLE is preferred to a Euclidean projection
    of ``estimate`` onto the simplex because it weighs categories by the multinomial likelihood
    of the counts rather than shifting them all alike. For a Laplace column ``consistent`` is the
    mean kept within the declared bounds.

    Examples
    --------
    >>> entry = {"header": "smoker", "mechanism": "coin", "epsilon": 1.0986, "n_categories": 2, "domain": ["no", "yes"]}
    >>> estimate_column(pd.Series(["no", "yes", "yes", "no"]), entry)["estimate"].tolist()
    [0.5, 0.5]
    >>> estimate_column(pd.Series(["no", "no", "no", "yes"]), entry)[["estimate", "consistent"]].values.tolist()
    [[1.0, 1.0], [0.0, 0.0]]
    >>> estimate_column(pd.Series(["no", "no", "no", "no"]), entry)[["estimate", "consistent"]].values.tolist()
    [[1.5, 1.0], [-0.5, 0.0]]
    """
    if entry["mechanism"] == "laplace":
        values = pd.to_numeric(released, errors="coerce").to_numpy(dtype=float)
        values = values[np.isfinite(values)]
        return mean_from_sum(values.size, float(values.sum()), entry, confidence)
    return estimate_counts(np.bincount(released_codes(released, entry), minlength=_categories(entry)), entry, confidence)


def _categories(entry: dict[str, Any]) -> int:
    if entry["mechanism"] not in ("coin", "k-ary", "bins"):
        raise ValueError(f"column {entry['header']!r} is not randomised by randomized response ({entry['mechanism']})")
    return int(entry["n_categories"])


def estimate_counts(counts: ArrayLike, entry: dict[str, Any], confidence: float = 0.95) -> pd.DataFrame:
    """:func:`estimate_column` from the released counts of each category (in the order of ``entry["domain"]``).

    For buyers who count in a database rather than reading the file.
    """
    _categories(entry)
    return frequencies_from_counts(counts, entry, confidence)


def estimate_joint(
    released_a: pd.Series, entry_a: dict[str, Any], released_b: pd.Series, entry_b: dict[str, Any], confidence: float = 0.95
) -> pd.DataFrame:
    """Debiased joint shares of two randomized-response columns, with standard errors.

    The columns were randomised independently, so the observed joint shares are
    ``Λ = M_A Π M_Bᵀ`` and ``Π̂ = M_A⁻¹ Λ̂ (M_B⁻¹)ᵀ`` — the inverse Kronecker product
    ``(M_A ⊗ M_B)⁻¹`` applied to the flattened table. A cell's variance is
    ``((K^∘2 Λ̂)_c − π̂_c)/n`` with ``K = M_A⁻¹ ⊗ M_B⁻¹`` squared element-wise (from the
    multinomial covariance of ``Λ̂``), computed as ``(M_A⁻¹)^∘2 Λ̂ ((M_B⁻¹)^∘2)ᵀ`` without forming
    ``K``. One row per pair of categories.
    """
    codes_a, codes_b = released_codes(released_a, entry_a), released_codes(released_b, entry_b)
    if codes_a.size != codes_b.size:
        raise ValueError("the two columns must have the same length")
    ka, kb = _categories(entry_a), _categories(entry_b)
    counts = np.bincount(codes_a * kb + codes_b, minlength=ka * kb).reshape(ka, kb)
    return joint_from_counts(counts, entry_a, entry_b, confidence)


def estimate_joint_counts(
    counts: ArrayLike, entry_a: dict[str, Any], entry_b: dict[str, Any], confidence: float = 0.95
) -> pd.DataFrame:
    """:func:`estimate_joint` from the released joint counts (a ``k_A × k_B`` table in domain order)."""
    _categories(entry_a), _categories(entry_b)
    return joint_from_counts(counts, entry_a, entry_b, confidence)


def estimate_release(
    source: ReleaseSource,
    report: dict[str, Any],
    columns: Iterable[str] | None = None,
    confidence: float = 0.95,
    chunksize: int = DEFAULT_CHUNKSIZE,
) -> dict[str, pd.DataFrame]:
    """:func:`estimate_column` for the randomised columns of a released file, read in chunks.

    ``source`` is a path (a file, or the folder of a copy released in parts), bytes or a file object; ``columns`` (names or headers) defaults to
    every randomised column of the report. Returns one table per column, by header.
    """
    entries = [e for e in report.get("columns", []) if e["mechanism"] in RANDOMISED]
    if columns is not None:
        entries = [report_entry(report, c) for c in columns]
    counts = {e["header"]: np.zeros(e.get("n_categories", 0), dtype=np.int64) for e in entries}
    sizes = {e["header"]: 0 for e in entries}
    sums = {e["header"]: 0.0 for e in entries}
    source = _opened(source)
    try:
        for chunk in pd.read_csv(
            source, dtype=str, keep_default_na=False, na_filter=False, usecols=[e["header"] for e in entries], chunksize=chunksize
        ):
            for e in entries:
                if e["mechanism"] == "laplace":
                    values = pd.to_numeric(chunk[e["header"]], errors="coerce").to_numpy(dtype=float)
                    values = values[np.isfinite(values)]
                    sizes[e["header"]] += values.size
                    sums[e["header"]] += float(values.sum())
                else:
                    counts[e["header"]] += np.bincount(released_codes(chunk[e["header"]], e), minlength=_categories(e))
    except DataError:
        raise
    except (ValueError, pd.errors.ParserError):
        raise DataError(
            _("The released file does not have the columns its report describes: does the report belong to this file?")
        ) from None
    return {
        e["header"]: mean_from_sum(sizes[e["header"]], sums[e["header"]], e, confidence)
        if e["mechanism"] == "laplace"
        else estimate_counts(counts[e["header"]], e, confidence)
        for e in entries
    }


def estimate_vs_truth(
    frame: pd.DataFrame, schema: Schema, plan: ReleasePlan, released: pd.DataFrame, column: str, confidence: float = 0.95
) -> pd.DataFrame:
    """The buyer's estimate beside the truth it estimates — for the owner's eyes only.

    The truth is what the estimator is unbiased for: each declared category's share (a missing
    or undeclared value counted as ``1/k`` of every category, unless missing values are their
    own category), or the mean of the clipped values. When the schema names a privacy unit the
    copy holds a random subset of at most ``rows_per_person`` rows of each person, so each row
    counts by its chance of being kept, ``min(1, rows_per_person / the person's rows)``. Never
    give this table to a buyer: it holds statistics of the private data.
    """
    treatments, _unused, _unused = resolve(plan, schema)
    matches = [t for t in treatments if column in (t.name, t.header) and t.mechanism in RANDOMISED]
    if not matches:
        raise ValueError(f"column {column!r} is not randomised by this plan")
    t = matches[0]
    estimate = estimate_column(released[t.header], t.entry(), confidence).drop(columns="consistent")
    inputs, _codes = t.inputs(frame)
    weights = _kept_chance(frame, schema)
    if t.mechanism == "laplace":
        truth = np.array([inputs.mean() if weights is None else np.average(inputs, weights=weights)])
    elif weights is None:
        valid = inputs >= 0
        truth = np.bincount(inputs[valid], minlength=t.k) / max(inputs.size, 1) + (~valid).mean() / t.k
    else:
        valid, total = inputs >= 0, float(weights.sum())
        truth = np.bincount(inputs[valid], weights=weights[valid], minlength=t.k) / total + weights[~valid].sum() / total / t.k
    estimate.insert(1, "truth", truth)
    estimate["covered"] = (estimate["ci_lower"] <= estimate["truth"]) & (estimate["truth"] <= estimate["ci_upper"])
    return estimate


def _kept_chance(frame: pd.DataFrame, schema: Schema) -> np.ndarray | None:
    """Each row's chance of being in the copy, ``min(1, k / its person's rows)``, with a privacy unit (None: every row is)."""
    bound = person_bound(schema)
    if bound is None:
        return None
    _unused, person, rows = np.unique(person_keys(frame[bound.column]), return_inverse=True, return_counts=True)
    return np.minimum(1.0, bound.rows_per_person / rows[person])


# --- the arithmetic --------------------------------------------------------------------------------

ESTIMATE_COLUMNS = ["category", "estimate", "std_error", "ci_lower", "ci_upper", "consistent"]


def z_value(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def response(entry: dict[str, Any]) -> KaryRandomizedResponse:
    """The mechanism a report entry describes (for its keep probability and response matrix)."""
    if entry["mechanism"] == "coin":
        return CoinRandomizedResponse()
    return KaryRandomizedResponse(float(entry["epsilon"]), int(entry["n_categories"]))


def released_codes(values: pd.Series, entry: dict[str, Any]) -> np.ndarray:
    """Codes of released labels over the report's domain; a label outside it means a mismatched report."""
    codes = pd.Index(entry["domain"], dtype=object).get_indexer(values.astype(str).to_numpy(dtype=object))
    if (codes < 0).any():
        raise DataError(
            _(
                "Column '{header}' holds values that are not in its domain in the report: does the report belong to this file?"
            ).format(header=entry["header"])
        )
    return codes


def frequencies_from_counts(counts: ArrayLike, entry: dict[str, Any], confidence: float) -> pd.DataFrame:
    """Debiased shares from the released counts of one column (see :func:`dpcore.release.estimate_column`)."""
    counts = np.asarray(counts, dtype=float)
    if counts.shape != (entry["n_categories"],):
        raise ValueError(f"counts must hold one number per category of {entry['header']!r} ({entry['n_categories']})")
    rr = response(entry)
    estimate, std_error = rr.estimate_from_counts(counts)
    consistent = consistent_shares(counts, rr.keep_probability, rr.other_probability)
    z = z_value(confidence)
    return pd.DataFrame(
        dict(
            zip(
                ESTIMATE_COLUMNS,
                [entry["domain"], estimate, std_error, estimate - z * std_error, estimate + z * std_error, consistent],
                strict=True,
            )
        )
    )


def consistent_shares(counts: ArrayLike, p: float, q: float) -> np.ndarray:
    r"""The maximum-likelihood true shares on the simplex, from the released counts of one column.

    Under k-ary randomized response the released counts ``c`` are multinomial with
    probabilities ``λ = M π``, ``M[o, t] = p`` if ``o = t`` else ``q``. Because every column of
    ``M`` sums to 1, ``M π = (p − q) π + q`` on the simplex, an affine bijection onto
    ``{λ : Σ λ = 1, λ_o ≥ q}``; so the MLE maximises ``Σ c_o log λ_o`` over that set, whose
    Karush–Kuhn–Tucker conditions give ``λ_o = max(q, c_o / μ)`` with ``μ > 0`` fixed by
    ``Σ λ_o = 1`` ("water-filling"). Sorting the counts, the categories above the floor are the
    largest ``m`` with ``c_(m) > q μ_m``, ``μ_m = C_m / (1 − (k − m) q)`` and ``C_m`` the sum of the
    ``m`` largest counts. Then ``π = (λ − q)/(p − q)``.

    This is the fixed point of the EM / iterative Bayesian update ``π ← π ⊙ Mᵀ(λ̂ / M π)``,
    computed exactly in ``O(k log k)`` instead of iterated: EM's speed is set by how much of
    the information the noise hides, so at a small ε a few hundred iterations stop far from
    the maximum (at ε = 0.025 and two categories, 500 iterations from uniform reach a share
    of 0.75 where the maximum is 1). The MLE is preferred to the Euclidean projection of the
    unbiased vector onto the simplex: it weighs each category by the multinomial likelihood,
    and it equals the unbiased estimate whenever that already lies in the simplex (the
    projection does too, but shifts every category by the same amount otherwise). With no
    rows the likelihood is flat and the uniform shares are returned.
    """
    counts = np.asarray(counts, dtype=float)
    k = counts.size
    if counts.sum() <= 0:
        return np.full(k, 1.0 / k)
    largest = np.sort(counts)[::-1]
    free = np.arange(1, k + 1)
    mu = np.cumsum(largest) / (1.0 - (k - free) * q)  # 1 − (k − m) q ≥ p > 0
    m = np.flatnonzero(largest > q * mu)[-1]  # m = 1 always qualifies, since p > q
    observed = np.maximum(counts / mu[m], q)
    shares = np.clip((observed - q) / (p - q), 0.0, 1.0)
    return shares / shares.sum()


def joint_from_counts(counts: ArrayLike, entry_a: dict[str, Any], entry_b: dict[str, Any], confidence: float) -> pd.DataFrame:
    """Debiased joint shares from the released joint counts (see :func:`dpcore.release.estimate_joint`)."""
    counts = np.asarray(counts, dtype=float)
    ka, kb = entry_a["n_categories"], entry_b["n_categories"]
    if counts.shape != (ka, kb):
        raise ValueError(f"counts must be a {ka} x {kb} table")
    n = max(counts.sum(), 1.0)
    observed = counts / n
    inv_a = np.linalg.inv(response(entry_a).response_matrix())
    inv_b = np.linalg.inv(response(entry_b).response_matrix())
    estimate = inv_a @ observed @ inv_b.T
    second = np.square(inv_a) @ observed @ np.square(inv_b).T
    std_error = np.sqrt(np.maximum(second - np.clip(estimate, 0.0, 1.0), 0.0) / n)
    z = z_value(confidence)
    return pd.DataFrame(
        {
            entry_a["header"]: np.repeat(entry_a["domain"], kb),
            entry_b["header"]: np.tile(entry_b["domain"], ka),
            "estimate": estimate.ravel(),
            "std_error": std_error.ravel(),
            "ci_lower": (estimate - z * std_error).ravel(),
            "ci_upper": (estimate + z * std_error).ravel(),
        }
    )


def mean_std_error(scale: float, n: int) -> float:
    """Standard error of a Laplace column's mean over ``n`` released values: ``b√2/√n`` (the report's formula)."""
    return math.sqrt(2.0) * scale / math.sqrt(max(n, 1))


def mean_from_sum(n: int, total: float, entry: dict[str, Any], confidence: float) -> pd.DataFrame:
    """The mean of a Laplace column's clipped values, with the exact standard error of its noise."""
    mean = total / max(n, 1)
    std_error = mean_std_error(entry["scale"], n)
    # The consistent mean: the clipped values' mean lies within the declared bounds, so the estimate is kept there.
    consistent = min(max(mean, entry.get("lower", -math.inf)), entry.get("upper", math.inf))
    z = z_value(confidence)
    return pd.DataFrame(
        dict(
            zip(
                ESTIMATE_COLUMNS,
                [["mean"], [mean], [std_error], [mean - z * std_error], [mean + z * std_error], [consistent]],
                strict=True,
            )
        )
    )
