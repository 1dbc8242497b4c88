"""Which dataset is this table? Fingerprints and overlap sketches that survive a re-save.

A privacy budget protects *people*, so it must follow them from one file to the next. A
spreadsheet re-save, reordered or renamed columns, an added column or a reordered file are
still the same people; this module recognises them without storing the table.

* **Cells are hashed by meaning, not spelling**: numbers by their value to 12 significant
  digits (``1.50`` and ``1.5`` agree, and so do a number and its text), text stripped,
  dates by their calendar day and time (``2020-03-04``, ``3/4/2020`` and ``04/03/2020`` agree:
  day and month are taken as an unordered pair, so day-first and month-first re-saves match).
* **A version fingerprint** (:class:`VersionFingerprint`) is a multiset hash of the rows of
  the columns that a release or model uses, each row a column-order-free combination of its
  cells: insensitive to row order, column order, header spelling and the columns left out.
* **An overlap sketch** (:class:`TableSketch`) keeps, per column, the bottom-k distinct cell
  hashes with their counts (to match columns by content whatever their names), and a
  bottom-k sample of rows (their cell hashes). A new table's overlap with a known one is the
  share of the known sample's rows found in it on the matched columns (each cell salted by its
  column's place in the pairing, so yes/no answers swapped between two questions differ),
  scaled both ways by the row counts (:func:`overlap`).
* **People, not keys**: a column that only numbers or names the file's rows — unique text or
  whole numbers that count the rows (``1..N``, ``id_000001``), codes such as ``P0042`` that tell
  most rows apart — is judged *key-like* when the sketch is built and never counts as evidence,
  nor does a column that is (nearly) constant. Two unrelated tables that were both given row
  numbers and a ``train``/``test`` column share those by construction, not by their people; a
  match needs at least :data:`MIN_EVIDENCE_COLUMNS` informative columns that agree.

The sketches hold hashes of private values; they live only in the owner's local ledger
beside the budget and are never written into a report or a released file.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tempfile
import warnings
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from dpcore.budget.fingerprint import MISSING_HASH, NUMBER, mix, number_hashes, plain_hashes

SKETCH_VALUES = 128
SKETCH_ROWS = 512
MATCH_SCORE = 0.8
#: The fewest informative columns whose agreement counts as evidence of the same people.
MIN_EVIDENCE_COLUMNS = 2
#: A column whose most common value fills this share of the sampled rows is no evidence.
NEAR_CONSTANT = 0.95
#: Below this many rows a unique column tells nothing (a few rows are unique on anything) unless it is
#: sequential whole numbers or a code; chosen with :data:`dpcore.tables.schema.MIN_ROWS_FOR_UNIQUE_ID`.
MIN_ROWS_FOR_KEYS = 20
#: Unique whole numbers spread over at most this many times the row count number the rows (a 5 % extract
#: of a numbered file still does); spread wider they are measurements (a census weight, counts of orders).
SEQUENCE_SPREAD = 20
_U = np.uint64
_PREFIX_BITS = 20
_DATE_TAG = _U(0x1F83D9ABFB41BD6B)
_CELL_SALT = _U(0x5BE0CD19137E2179)
_LANES = (_U(0x510E527FADE682D1), _U(0x9B05688C2B3E6C1F))
_DATE_SHAPE = re.compile(r"^\d{1,4}[-/. ]\d{1,2}[-/. ]\d{1,4}([ T]\d{1,2}:\d{2}(:\d{2})?)?$")
# A record code: a short letter prefix, an optional separator and digits (id_000001, P0042), or zero-padded
# digits (00017). Plain digits are numbers, judged as numbers whether a reader kept them as text or not.
_CODE_SHAPE = r"[A-Za-z]{1,8}[-_#/. ]?\d+|0\d+"


def normal_name(name: object) -> str:
    """A header as a comparison key: case, spaces and punctuation removed."""
    return re.sub(r"[^0-9a-z]", "", str(name).casefold())


def _rounded(numbers: np.ndarray) -> np.ndarray:
    """Numbers to 12 significant digits, so a re-save's last-digit noise hashes alike."""
    numbers = np.asarray(numbers, dtype=np.float64)
    # Below 1e-290 the scale 10**(11 - magnitude) overflows; numbers that small are kept as they are.
    finite = np.isfinite(numbers) & (np.abs(numbers) >= 1e-290)
    out = numbers.copy()
    magnitude = np.floor(np.log10(np.abs(numbers[finite])))
    scale = 10.0 ** (11 - magnitude)
    out[finite] = np.round(numbers[finite] * scale) / scale
    return out


def _date_keys(text: pd.Series) -> np.ndarray | None:
    """Calendar keys of date-like text (day and month unordered), or None when it is not dates."""
    if text.empty or not text.str.match(_DATE_SHAPE).mean() >= 0.9:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = pd.to_datetime(text, errors="coerce", format="mixed")
    if parsed.notna().mean() < 0.9:
        return None
    low = np.minimum(parsed.dt.month, parsed.dt.day)
    high = np.maximum(parsed.dt.month, parsed.dt.day)
    clock = parsed.dt.hour * 10_000 + parsed.dt.minute * 100 + parsed.dt.second
    keys = ((parsed.dt.year * 10_000 + low * 100 + high) * 1_000_000 + clock).to_numpy(dtype=np.float64, na_value=np.nan)
    return keys


@dataclass
class HashedColumn:
    """A column's cell hashes as a table of its distinct values' hashes and each cell's place in it.

    Most columns hold few values, so the work that follows a hash — mixing it into a row key,
    counting it for the sketch — is done once per distinct value, not once per cell.

    Attributes
    ----------
    values : ndarray of uint64
        The hash of each distinct value, the last one :data:`MISSING_HASH` (two values may hash
        alike: ``1.5`` and ``1.50``).
    codes : ndarray of int64
        Per cell, its value's place in ``values``; -1 (the last place) for a missing cell.
    """

    values: np.ndarray
    codes: np.ndarray

    @property
    def cells(self) -> np.ndarray:
        """One hash per cell."""
        return self.values[self.codes]

    def counts(self) -> np.ndarray:
        """How many cells hold each of ``values`` (missing ones counted in the last place)."""
        counts = np.bincount(self.codes + 1, minlength=len(self.values))
        return np.concatenate([counts[1:], counts[:1]])

    def mixed(self) -> np.ndarray:
        """The cells' hashes as they enter a row key (:func:`row_keys`), mixed once per distinct value."""
        return _mixed(self.values)[self.codes]


def hash_column(values: pd.Series) -> HashedColumn:
    """:func:`cell_hashes` of a column, as a :class:`HashedColumn`."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
        codes, numbers = pd.factorize(values.to_numpy(dtype=np.float64, na_value=np.nan), use_na_sentinel=True)
        per_value = number_hashes(_rounded(numbers))
    else:
        codes, uniques = pd.factorize(values, use_na_sentinel=True)
        per_value = _text_hashes(uniques)
    return HashedColumn(np.append(per_value.astype(np.uint64), MISSING_HASH), np.asarray(codes, dtype=np.int64))


def _text_hashes(uniques: Any) -> np.ndarray:
    """The hashes of a text column's distinct values."""
    # Case and runs of spaces are a spelling, not a person: 'Self-emp ' and 'SELF-EMP' agree.
    text = (
        pd.Series(np.asarray(uniques, dtype=object)).astype(str).str.strip().str.casefold().str.replace(r"\s+", " ", regex=True)
    )
    dates = _date_keys(text)
    if dates is not None:
        return np.where(np.isnan(dates), plain_hashes(text), mix(number_hashes(dates) ^ _DATE_TAG))
    per_value = plain_hashes(text)
    numbers = pd.to_numeric(text, errors="coerce").to_numpy(dtype=np.float64)
    is_number = np.isfinite(numbers)
    if is_number.any():
        per_value = np.where(is_number, number_hashes(_rounded(np.where(is_number, numbers, 0.0))), per_value)
    return per_value


def cell_hashes(values: pd.Series) -> np.ndarray:
    """One uint64 per cell, equal for cells that mean the same (see the module docstring)."""
    return hash_column(values).cells


def _mixed(hashes: np.ndarray) -> np.ndarray:
    """A column's cell hashes as they enter a row key."""
    return mix(hashes ^ _CELL_SALT)


def _summed(mixed: list[np.ndarray]) -> np.ndarray:
    """Row keys from mixed cell hashes: their sum mod 2**64, so column order does not matter."""
    if not mixed:
        return np.zeros(0, dtype=np.uint64)
    return np.asarray(np.sum(mixed, axis=0, dtype=np.uint64))


def row_keys(columns: list[np.ndarray]) -> np.ndarray:
    """A column-order-free key per row: the sum (mod 2**64) of its mixed cell hashes."""
    return _summed([_mixed(hashes) for hashes in columns])


def hashed_row_keys(columns: list[HashedColumn], rows: int) -> np.ndarray:
    """:func:`row_keys` of hashed columns, each mixed once per distinct value and added in place."""
    keys = np.zeros(rows, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for column in columns:
            keys += column.mixed()
    return keys


class VersionFingerprint:
    """A multiset hash of a table's rows over the columns given, fed chunk by chunk.

    Row order, column order and header spelling do not change it; nor do columns not given.
    """

    def __init__(self) -> None:
        self.lanes = np.zeros(2, dtype=np.uint64)
        self.rows = 0

    def add(self, frame: pd.DataFrame, columns: Iterable[Hashable]) -> None:
        self.add_hashes([cell_hashes(frame[c]) for c in columns], len(frame))

    def add_hashes(self, hashes: list[np.ndarray], rows: int) -> None:
        """Add a chunk given as its columns' :func:`cell_hashes`."""
        self.add_keys(row_keys(hashes), rows)

    def add_keys(self, keys: np.ndarray, rows: int) -> None:
        """Add a chunk given as its :func:`row_keys` (shared with a :class:`SketchBuilder`)."""
        with np.errstate(over="ignore"):
            for lane, salt in enumerate(_LANES):
                self.lanes[lane] += np.sum(mix(keys ^ salt), dtype=np.uint64)
        self.rows += rows

    def hexdigest(self) -> str:
        digest = hashlib.sha256(b"dpcore-version-fingerprint/2\x1e")
        digest.update(self.lanes.astype("<u8").tobytes())
        digest.update(str(self.rows).encode("ascii"))
        return digest.hexdigest()[:32]


def version_fingerprint(frame: pd.DataFrame, columns: Iterable[Hashable]) -> str:
    """:class:`VersionFingerprint` of an in-memory table over ``columns``."""
    fingerprint = VersionFingerprint()
    fingerprint.add(frame, [c for c in columns if c in frame.columns])
    return fingerprint.hexdigest()


@dataclass
class TableSketch:
    """What the ledger keeps to recognise a table's people later (hashes only).

    Attributes
    ----------
    rows : int
        The table's exact row count (owner-only, like everything in the ledger).
    names : list of str
        Normalised headers, used only to break ties between columns of equal content.
    values, counts : list of ndarray
        Per column, the bottom-k distinct cell hashes (sorted) and how often each occurs.
    sample : ndarray of shape (k, d)
        The cell hashes of the rows whose row key is among the k smallest.
    sample_keys : ndarray of shape (k,)
        Those rows' keys.
    keys : list of bool or None
        Per column, True when it is key-like (see :func:`_key_like`): judged from the data when
        the sketch is built. None for sketches stored before it was kept; their columns are then
        judged by the new table's column they would pair with (:func:`match_columns`).
    """

    rows: int
    names: list[str]
    values: list[np.ndarray]
    counts: list[np.ndarray]
    sample: np.ndarray
    sample_keys: np.ndarray
    keys: list[bool] | None = None

    def informative(self) -> np.ndarray:
        """Per column, whether it can be evidence of people: neither key-like nor (nearly) constant."""
        constant = np.array(
            [_near_constant(self.sample[:, i], self.counts[i], self.rows) for i in range(len(self.names))], dtype=bool
        )
        keys = np.array(self.keys if self.keys is not None else [False] * len(self.names), dtype=bool)
        return ~(constant | keys)

    def to_bytes(self) -> bytes:
        buffer = io.BytesIO()
        # Any: numpy's stubs would let a ``**`` of arrays fill savez's ``allow_pickle: bool``.
        arrays: dict[str, Any] = {f"v{i}": v for i, v in enumerate(self.values)} | {f"c{i}": c for i, c in enumerate(self.counts)}
        meta = json.dumps({"rows": self.rows, "names": self.names, "keys": self.keys}).encode("utf-8")
        np.savez_compressed(buffer, meta=np.frombuffer(meta, dtype=np.uint8), sample=self.sample, keys=self.sample_keys, **arrays)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> TableSketch:
        with np.load(io.BytesIO(data)) as stored:
            meta = json.loads(stored["meta"].tobytes().decode("utf-8"))
            d = len(meta["names"])
            return cls(
                meta["rows"],
                meta["names"],
                [stored[f"v{i}"] for i in range(d)],
                [stored[f"c{i}"] for i in range(d)],
                stored["sample"],
                stored["keys"],
                meta.get("keys"),
            )


def _near_constant(sampled: np.ndarray, counts: np.ndarray, rows: int) -> bool:
    """One value fills :data:`NEAR_CONSTANT` of the sampled rows (or of all rows, by the exact bottom-k counts)."""
    if len(sampled) == 0:
        return True
    _values, seen = np.unique(sampled, return_counts=True)
    return bool(seen.max() >= NEAR_CONSTANT * len(sampled) or (rows and len(counts) and counts.max() >= NEAR_CONSTANT * rows))


@dataclass
class _KeyTraits:
    """What the rows that entered a column's sample say about it being a key (folded chunk by chunk)."""

    whole_or_text: bool = True  # integers, or text that is neither numbers with fractions nor dates
    code: bool = True  # every value is a record code (_CODE_SHAPE)
    low: float = np.inf  # the range of its whole numbers
    high: float = -np.inf

    def add(self, values: pd.Series) -> None:
        """Fold in the distinct values of the rows entering the sample (a few hundred at most)."""
        if pd.api.types.is_bool_dtype(values.dtype) or pd.api.types.is_datetime64_any_dtype(values.dtype):
            self.whole_or_text = self.code = False
            return
        if pd.api.types.is_numeric_dtype(values.dtype):
            self.code = False
            self._numbers(values.to_numpy(dtype=np.float64, na_value=np.nan))
            return
        # Text, tested in arrow's vectorised regular expressions.
        text = pc.utf8_trim_whitespace(pa.array(pd.unique(values.dropna()).astype(str), type=pa.string()))
        if len(text) == 0:
            return
        self.code = self.code and bool(pc.all(pc.match_substring_regex(text, f"^(?:{_CODE_SHAPE})$")).as_py())
        if pc.all(pc.match_substring_regex(text, NUMBER)).as_py():
            self._numbers(pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False))
        elif pc.mean(pc.cast(pc.match_substring_regex(text, _DATE_SHAPE.pattern), pa.int8())).as_py() >= 0.9:
            self.whole_or_text = False  # dates describe, they do not number

    def _numbers(self, numbers: np.ndarray) -> None:
        finite = numbers[np.isfinite(numbers)]
        self.whole_or_text = self.whole_or_text and bool((finite == np.round(finite)).all())
        if len(finite):
            self.low, self.high = min(self.low, float(finite.min())), max(self.high, float(finite.max()))


def _key_like(traits: _KeyTraits, sampled: np.ndarray, counts: np.ndarray, rows: int) -> bool:
    """Whether a column only numbers or names the rows (a file's key), judged on the sketch.

    Unique — no value twice among the sampled rows nor among the exact bottom-k counts — and
    either whole numbers that count the rows (their range at most :data:`SEQUENCE_SPREAD` times
    the row count: ``1..N``, or an extract of it) or text (``id_000001``, a name, an e-mail).
    Unique measurements are not keys: a coordinate, a price, a count of orders or a census
    weight describes its row; nor are dates. Under :data:`MIN_ROWS_FOR_KEYS` rows uniqueness
    tells nothing, so only sequences and codes are keys there. A code column (``P0042``) that
    tells at least half of the sampled rows apart is a key even with repeats: it names a
    person's several rows, which an unrelated table numbers the same way.
    """
    if len(sampled) == 0 or rows < 2:
        return False
    distinct = len(np.unique(sampled))
    if traits.code and distinct >= 0.5 * len(sampled) and rows >= MIN_ROWS_FOR_KEYS:
        return True
    unique = distinct == len(sampled) and bool((counts <= 1).all())
    if not (unique and traits.whole_or_text):
        return False
    if np.isfinite(traits.low):
        return bool(traits.high - traits.low + 1 <= SEQUENCE_SPREAD * rows)
    return rows >= MIN_ROWS_FOR_KEYS or traits.code


def _smallest(keys: np.ndarray, k: int) -> np.ndarray:
    """The positions of the ``k`` smallest keys in order, ties by position (what a stable sort's first ``k`` are)."""
    if len(keys) <= k:
        return np.argsort(keys, kind="stable")
    few = np.flatnonzero(keys <= np.partition(keys, k - 1)[k - 1])
    return few[np.argsort(keys[few], kind="stable")][:k]


class SketchBuilder:
    """Builds a :class:`TableSketch` chunk by chunk in bounded memory.

    A value that drops out of a column's bottom-k can never come back (the threshold only
    falls), so the kept counts are exact over the whole table. Which columns are key-like is
    judged on the rows that enter the row sample (a few hundred, whatever the table's size).
    """

    def __init__(self, columns: Iterable[object]) -> None:
        self.columns = [str(c) for c in columns]
        self.values = [np.zeros(0, dtype=np.uint64) for _ in self.columns]
        self.counts = [np.zeros(0, dtype=np.int64) for _ in self.columns]
        self.sample = np.zeros((0, len(self.columns)), dtype=np.uint64)
        self.keys = np.zeros(0, dtype=np.uint64)
        self.traits = [_KeyTraits() for _ in self.columns]
        self.rows = 0

    def add(self, frame: pd.DataFrame, hashed: list[HashedColumn] | None = None) -> tuple[list[np.ndarray], np.ndarray]:
        """Add a chunk; ``hashed``, its columns' :func:`hash_column` if already made.

        Returns the chunk's cell hashes and row keys, to share with a fingerprint.
        """
        if hashed is None:
            hashed = [hash_column(frame[c]) for c in self.columns]
        for i, column in enumerate(hashed):
            # Counted once per distinct value and grouped by a hash table, and only the k smallest
            # distinct hashes sorted: one pass over the chunk whether the column holds three values or a million.
            counts = column.counts()
            present = counts > 0
            codes, distinct = pd.factorize(np.concatenate([self.values[i], column.values[present]]))
            weights = np.concatenate([self.counts[i], counts[present]])
            counts = np.bincount(codes, weights=weights, minlength=len(distinct)).astype(np.int64)
            lowest = np.argpartition(distinct, SKETCH_VALUES - 1)[:SKETCH_VALUES] if len(distinct) > SKETCH_VALUES else None
            if lowest is not None:
                distinct, counts = distinct[lowest], counts[lowest]
            order = np.argsort(distinct)
            self.values[i], self.counts[i] = distinct[order].astype(np.uint64), counts[order]
        keys = hashed_row_keys(hashed, len(frame))
        hashes = [column.cells for column in hashed]
        # Only the chunk's own bottom-k rows can enter the sample.
        candidates = _smallest(keys, SKETCH_ROWS)
        cells = np.column_stack([h[candidates] for h in hashes]) if hashes else np.zeros((len(candidates), 0), dtype=np.uint64)
        merged_keys, merged_cells = np.concatenate([self.keys, keys[candidates]]), np.vstack([self.sample, cells])
        keep = np.argsort(merged_keys, kind="stable")[:SKETCH_ROWS]
        entering = candidates[keep[keep >= len(self.keys)] - len(self.keys)]
        if len(entering):
            rows = frame.iloc[entering]
            for traits, column_name in zip(self.traits, self.columns, strict=True):
                traits.add(rows[column_name])
        self.keys, self.sample = merged_keys[keep], merged_cells[keep]
        self.rows += len(frame)
        return hashes, keys

    def finish(self) -> TableSketch:
        keys = [_key_like(self.traits[i], self.sample[:, i], self.counts[i], self.rows) for i in range(len(self.columns))]
        return TableSketch(
            self.rows, [normal_name(c) for c in self.columns], self.values, self.counts, self.sample, self.keys, keys
        )


def sketch_table(frame: pd.DataFrame) -> TableSketch:
    """:class:`SketchBuilder` over a whole in-memory table."""
    builder = SketchBuilder(frame.columns)
    builder.add(frame)
    return builder.finish()


def column_similarity(values_a: np.ndarray, counts_a: np.ndarray, values_b: np.ndarray, counts_b: np.ndarray) -> float:
    """1 − total variation between two columns' value distributions on their shared hash range."""
    if len(values_a) == 0 or len(values_b) == 0:
        return 0.0
    limit = min(
        values_a[-1] if len(values_a) >= SKETCH_VALUES else np.iinfo(np.uint64).max,
        values_b[-1] if len(values_b) >= SKETCH_VALUES else np.iinfo(np.uint64).max,
    )
    a, b = values_a <= limit, values_b <= limit
    union = np.union1d(values_a[a], values_b[b])
    pa_ = np.zeros(len(union))
    pb_ = np.zeros(len(union))
    pa_[np.searchsorted(union, values_a[a])] = counts_a[a]
    pb_[np.searchsorted(union, values_b[b])] = counts_b[b]
    if pa_.sum() == 0 or pb_.sum() == 0:
        return 0.0
    return float(1.0 - 0.5 * np.abs(pa_ / pa_.sum() - pb_ / pb_.sum()).sum())


def match_columns(known: TableSketch, new: TableSketch) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Pairs ``(known column, new column)`` of informative columns that hold the same variable.

    Only columns that can be evidence of people take part (:meth:`TableSketch.informative`: a
    key-like or constant column of either table never pairs; a known sketch stored without key
    flags is judged by the new table's columns). A one-to-one assignment on content (score ≥
    :data:`MATCH_SCORE`), with a small bonus for an equal header that breaks ties between
    columns of alike content (several yes/no columns); then columns left unpaired whose headers
    are equal are paired too, because a regional or yearly extract keeps its headers while its
    value distributions move.

    Returns
    -------
    by_content, by_header : list of (int, int)
        The pairs matched on content, and those paired by their header alone: a header pair
        may hold the same cells or an edited column (every value changed), so
        :func:`overlaps` lets it count but never requires it.
    """
    known_used, new_used = np.flatnonzero(known.informative()), np.flatnonzero(new.informative())
    if not len(known_used) or not len(new_used):
        return [], []
    score = np.array(
        [
            [column_similarity(known.values[i], known.counts[i], new.values[j], new.counts[j]) for j in new_used]
            for i in known_used
        ]
    )
    bonus = np.array([[0.02 if known.names[i] == new.names[j] else 0.0 for j in new_used] for i in known_used])
    rows, cols = _assignment(score + bonus)
    by_content = [(int(known_used[i]), int(new_used[j])) for i, j in zip(rows, cols, strict=True) if score[i, j] >= MATCH_SCORE]
    paired_known, paired_new = {i for i, _ in by_content}, {j for _, j in by_content}
    by_header: list[tuple[int, int]] = []
    for i in known_used:
        name = known.names[i]
        j = next((j for j in new_used if new.names[j] == name and j not in paired_new), None)
        if i not in paired_known and j is not None and name:
            by_header.append((int(i), int(j)))
            paired_new.add(int(j))
    return by_content, by_header


def _assignment(gain: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The one-to-one pairing of rows and columns with the largest total ``gain`` (scipy's ``linear_sum_assignment``).

    When each row (each column, if there are fewer) has a best entry clearly above its others,
    in a column (row) of its own, that pairing is the only optimum, found without the solver:
    the usual case of a table against a version of itself, and scipy.optimize costs half a CPU
    second to import. Otherwise the solver decides, ties included.
    """
    transposed = gain.shape[0] > gain.shape[1]
    lines = gain.T if transposed else gain
    best = np.argmax(lines, axis=1)
    if lines.shape[1] > 1:
        runner_up = np.partition(lines, lines.shape[1] - 2, axis=1)[:, -2]
        clear = bool((lines[np.arange(len(lines)), best] - runner_up > 1e-9).all())
    else:
        clear = True
    if clear and len(np.unique(best)) == len(best):
        own = np.arange(len(lines))
        if not transposed:
            return own, best
        order = np.argsort(best)
        return best[order], own[order]
    from scipy.optimize import linear_sum_assignment  # here, not at the top: scipy.optimize costs the app's first page ~1 s

    rows, cols = linear_sum_assignment(-gain)
    return rows, cols


def _placed(hashes: np.ndarray, place: int) -> np.ndarray:
    """A matched column's cell hashes as they enter a row key, salted by the pair's place among the matched columns."""
    with np.errstate(over="ignore"):
        salt = mix(np.array([_CELL_SALT + _U(place)], dtype=np.uint64))[0]
    return mix(hashes ^ salt)


def _column_subsets(by_content: int, by_header: int) -> list[tuple[int, ...]]:
    """Which of the matched columns (places: the content pairs first, then the header pairs) to look rows up on.

    All of them, and each subset that leaves one out (a column changed in every row: next
    year's ages, a corrected unit), so one edited variable does not hide the same people. A
    column paired by its header alone may be such an edit too, however many there are: so
    also the content pairs alone, and the content pairs with one header pair each (for when
    they are too few to tell rows apart by themselves). At most two subsets per column and two
    more, whatever the width. Every subset keeps :data:`MIN_EVIDENCE_COLUMNS` columns: one
    column alone is no evidence. The content pairs alone never leave one more out: on Adult,
    other people of the same census then agree on all but their weight and age (27 % of a
    3,000-row extract's sampled rows).
    """
    everything = tuple(range(by_content + by_header))
    content = everything[:by_content]
    candidates = [everything, *(everything[:k] + everything[k + 1 :] for k in range(len(everything)))]
    if by_header:
        candidates += [content, *(content + (h,) for h in everything[by_content:])]
    return list(dict.fromkeys(s for s in candidates if len(s) >= MIN_EVIDENCE_COLUMNS))


def _subset_keys(placed: list[np.ndarray], subsets: list[tuple[int, ...]], by_content: int) -> Iterator[np.ndarray]:
    """The row keys of each subset of the placed columns.

    Each starts from the nearer of two sums — of all the columns, or of the content pairs
    (the first ``by_content``) — and adds or takes away the few columns it differs by (mod
    2**64), so a subset costs a pass over the rows or two, not one per column it holds.
    """
    bases = [(frozenset(range(len(placed))), _summed(placed))]
    if 0 < by_content < len(placed):
        bases.append((frozenset(range(by_content)), _summed(placed[:by_content])))
    for subset in subsets:
        members = frozenset(subset)
        base, total = min(bases, key=lambda b: len(b[0] ^ members))
        keys = total.copy()
        for k in base - members:
            keys -= placed[k]
        for k in members - base:
            keys += placed[k]
        yield keys


class _Lookup:
    """One subset's sampled row keys, looked up chunk by chunk in the new table."""

    def __init__(self, keys: np.ndarray) -> None:
        self.distinct, self.inverse = np.unique(keys, return_inverse=True)
        self.seen = np.zeros(len(self.distinct), dtype=bool)
        # Which top bits the sampled keys have: a row whose key's top bits are not among them is no sampled row.
        self.prefixes = np.zeros(1 << _PREFIX_BITS, dtype=bool)
        self.prefixes[self.distinct >> _U(64 - _PREFIX_BITS)] = True

    def look_in(self, chunk_keys: np.ndarray) -> None:
        """Mark the sampled keys found among ``chunk_keys``.

        Keys are uniform hashes, so a table of the sampled keys' top bits turns away all but
        about ``k / 2**20`` of the rows with one look each; only those few are binary-searched.
        """
        if not len(self.distinct) or not len(chunk_keys):
            return
        candidates = chunk_keys[self.prefixes[chunk_keys >> _U(64 - _PREFIX_BITS)]]
        place = np.minimum(np.searchsorted(self.distinct, candidates), len(self.distinct) - 1)
        self.seen[place[self.distinct[place] == candidates]] = True

    def share_found(self) -> float:
        """The share of the sampled rows (not of distinct keys) found so far."""
        return float(self.seen[self.inverse].mean()) if len(self.inverse) else 0.0


@dataclass
class _Plan:
    """The lookups for one known table: its matched columns in the new table, the subsets kept, their sampled rows' keys."""

    new_columns: list[int]
    by_content: int
    subsets: list[tuple[int, ...]]
    lookups: list[_Lookup]


def _plan(sketch: TableSketch, new: TableSketch) -> _Plan:
    """Which rows of ``sketch``'s sample to look for in the new table, on which column subsets."""
    by_content, by_header = match_columns(sketch, new)
    pairs = by_content + by_header
    subsets = _column_subsets(len(by_content), len(by_header)) if len(sketch.sample_keys) else []
    # Each matched pair salts its cells by its place, so 'yes' in one vote and 'no' in the next is not the reverse.
    placed = [_placed(sketch.sample[:, i], place) for place, (i, _j) in enumerate(pairs)]
    kept = [
        (subset, keys)
        for subset, keys in zip(subsets, _subset_keys(placed, subsets, len(by_content)), strict=True)
        if len(np.unique(keys)) >= 0.5 * len(keys)
    ]
    # A subset that holds another kept one finds no row that one misses: only the smallest are looked up.
    sets = [frozenset(subset) for subset, _ in kept]
    kept = [pair for pair, members in zip(kept, sets, strict=True) if not any(other < members for other in sets)]
    return _Plan(
        [j for _i, j in pairs],
        len(by_content),
        [subset for subset, _ in kept],
        [_Lookup(keys) for _, keys in kept],
    )


class HashSpill:
    """A table's hashed columns, chunk by chunk, kept in an unnamed temporary file for a second look.

    Identification looks rows up in the new table only after its sketch is whole; reading
    the file again means parsing it again, while its hashed columns are all that look needs:
    each column's values table and its cells' codes, one to four bytes a cell (written and read
    back in a fraction of the parse's time). The file has no name on disk and goes when the
    spill is closed or the process ends.
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile()
        self._columns: list[int] = []

    def add(self, hashed: list[HashedColumn]) -> None:
        """Keep one chunk's hashed columns, in the table's column order."""
        for column in hashed:
            np.save(self._file, column.values)
            np.save(self._file, column.codes.astype(np.min_scalar_type(-len(column.values))))
        self._columns.append(len(hashed))

    def __iter__(self) -> Iterator[_Hashes]:
        """Each chunk's hashed columns, in the order they were kept."""
        self._file.seek(0)
        for width in self._columns:
            yield _Hashes([HashedColumn(np.load(self._file), np.load(self._file)) for _ in range(width)])

    def close(self) -> None:
        self._file.close()


class _Hashes:
    """A chunk's hashed columns by position (:func:`overlaps_of_hashes`)."""

    def __init__(self, columns: list[HashedColumn]) -> None:
        self._columns = columns

    def __getitem__(self, position: int) -> HashedColumn:
        return self._columns[position]


class _LazyHashes(_Hashes):
    """A chunk's hashed columns by position, each column hashed when first asked for."""

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._made: dict[int, HashedColumn] = {}

    def __getitem__(self, position: int) -> HashedColumn:
        if position not in self._made:
            self._made[position] = hash_column(self._frame.iloc[:, position])
        return self._made[position]


def overlaps(known: list[TableSketch], new: TableSketch, new_frame_chunks: Iterable[pd.DataFrame]) -> list[float]:
    """The share of people the new table has in common with each known one (0 when it cannot be told).

    Each known table's sampled rows, restricted to the matched informative columns (and to
    the subsets of :func:`_column_subsets`, which leave out an edited column or the columns
    paired by header alone), are looked up among the new table's rows (``new_frame_chunks``:
    the new table, whole or in chunks, read once for all known tables). The hit rate
    estimates ``|K ∩ N| / |K|`` and, scaled by the row counts, ``|K ∩ N| / |N|``; the larger
    of the two, over the subsets, is returned. Fewer than :data:`MIN_EVIDENCE_COLUMNS`
    matched columns, or columns that together tell fewer than half of the sampled rows apart
    (a yes/no column and a train/test marker), are no evidence. A false match errs on the
    safe side — the people share one budget — so the tests lean towards matching, but never
    on keys: row numbers and record codes are shared by unrelated files.
    """
    return overlaps_of_hashes(known, new, (_LazyHashes(chunk) for chunk in new_frame_chunks))


def overlaps_of_hashes(known: list[TableSketch], new: TableSketch, new_hash_chunks: Iterable[_Hashes]) -> list[float]:
    """:func:`overlaps` from the new table's hashed columns (a :class:`HashSpill`): ``chunk[j]`` is column ``j``'s."""
    plans = [_plan(sketch, new) for sketch in known]
    if any(plan.subsets for plan in plans):
        for columns in new_hash_chunks:
            for plan in (plan for plan in plans if plan.subsets):
                # Salted and mixed once per distinct value of each matched column.
                placed = [_placed(columns[j].values, place)[columns[j].codes] for place, j in enumerate(plan.new_columns)]
                for lookup, chunk_keys in zip(plan.lookups, _subset_keys(placed, plan.subsets, plan.by_content), strict=True):
                    lookup.look_in(chunk_keys)
    out = []
    for sketch, plan in zip(known, plans, strict=True):
        best = 0.0
        for lookup in plan.lookups:
            share_of_known = lookup.share_found()
            best = max(best, share_of_known, min(share_of_known * sketch.rows / max(new.rows, 1), 1.0))
        out.append(best)
    return out


def overlap(known: TableSketch, new: TableSketch, new_frame_chunks: Iterable[pd.DataFrame]) -> float:
    """:func:`overlaps` for one known table."""
    return overlaps([known], new, new_frame_chunks)[0]
