"""Dataset identity: fingerprints and overlap sketches that survive re-saves, reorders and renames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.budget.identity import cell_hashes, overlap, sketch_table, version_fingerprint
from dpcore.tables.loading import read_csv_bytes, read_csv_path


@pytest.fixture(scope="module")
def adult(request):
    from conftest import SAMPLE_DATA

    frame, _ = read_csv_path(SAMPLE_DATA / "adult.csv")
    return frame.head(3000).reset_index(drop=True)


@pytest.fixture(scope="module")
def adult_sketch(adult):
    return sketch_table(adult)


def _same_people(adult, adult_sketch, other: pd.DataFrame) -> float:
    return overlap(adult_sketch, sketch_table(other), [other])


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_any_permutation_of_rows_or_columns_and_any_rename_is_the_same_dataset(adult, adult_sketch, data):
    rows = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1))).permutation(len(adult))
    columns = data.draw(st.permutations(list(adult.columns)))
    names = data.draw(
        st.lists(st.text("abcdefghij_ XYZ", min_size=1, max_size=12), min_size=len(columns), max_size=len(columns), unique=True)
    )
    other = adult.iloc[list(rows)][columns]
    other.columns = names
    assert version_fingerprint(other, names) == version_fingerprint(adult, adult.columns)
    assert _same_people(adult, adult_sketch, other) >= 0.99


def test_a_spreadsheet_re_save_is_the_same_dataset(adult, adult_sketch):
    """Numbers rewritten (1.50 vs 1.5, 12 digits), dates in another format, a semicolon file: the same people."""
    frame = adult.assign(visit=pd.date_range("2020-01-01", periods=len(adult), freq="7h").strftime("%Y-%m-%d %H:%M"))
    sketch = sketch_table(frame)
    resaved = frame.copy()
    resaved["visit"] = pd.to_datetime(frame["visit"]).dt.strftime("%d/%m/%Y %H:%M")  # day-first, as a European sheet
    resaved["hours-per-week"] = resaved["hours-per-week"].map(lambda v: f"{v:.2f}")
    text = resaved.sample(frac=1.0, random_state=2).to_csv(index=False, sep=";")
    reread, _ = read_csv_bytes(text.encode("utf-8"))
    assert version_fingerprint(reread, reread.columns) == version_fingerprint(frame, frame.columns)
    assert overlap(sketch, sketch_table(reread), [reread]) >= 0.99


def test_added_columns_and_edited_ignored_cells_keep_the_people(adult, adult_sketch):
    extended = adult.assign(note=np.arange(len(adult)) % 17, flag="x")
    assert _same_people(adult, adult_sketch, extended) >= 0.99
    edited = adult.copy()
    edited.loc[5, "fnlwgt"] = 1
    assert _same_people(adult, adult_sketch, edited) >= 0.99
    fewer_columns = adult.drop(columns=["fnlwgt", "education-num"])
    assert _same_people(adult, adult_sketch, fewer_columns) >= 0.99


def test_overlap_is_measured_both_ways_and_other_people_do_not_match(adult, adult_sketch):
    half = adult.sample(frac=0.5, random_state=1)
    assert _same_people(adult, adult_sketch, half) >= 0.9  # all of the new table's people are known
    assert overlap(sketch_table(half), adult_sketch, [adult]) >= 0.9
    from conftest import SAMPLE_DATA

    others, _ = read_csv_path(SAMPLE_DATA / "california_housing.csv")
    assert _same_people(adult, adult_sketch, others) == 0.0
    everyone, _ = read_csv_path(SAMPLE_DATA / "adult.csv")
    strangers = everyone.iloc[10_000:13_000]  # other people of the same census
    assert _same_people(adult, adult_sketch, strangers) < 0.05


def test_a_single_yes_no_column_is_no_evidence():
    a = pd.DataFrame({"answer": ["y", "n"] * 200})
    b = pd.DataFrame({"answer": ["n", "y"] * 300})
    assert overlap(sketch_table(a), sketch_table(b), [b]) == 0.0


def test_numbers_and_their_text_hash_alike():
    assert (cell_hashes(pd.Series([1.5, 2.0, np.nan])) == cell_hashes(pd.Series(["1.50", "2", None]))).all()
    assert cell_hashes(pd.Series([0.30000000000000004]))[0] == cell_hashes(pd.Series([0.3]))[0]
    dates = cell_hashes(pd.Series(["2020-03-04", "2020-12-25"]))
    assert (dates == cell_hashes(pd.Series(["3/4/2020", "25/12/2020"]))).all()


def test_numbers_near_the_smallest_float_keep_distinct_hashes():
    with np.errstate(all="raise"):
        tiny = cell_hashes(pd.Series([1e-300, 2e-300, 5e-324]))
    assert len(set(tiny.tolist())) == 3


def test_extracts_narrow_exports_and_next_years_file_are_the_same_people(adult, adult_sketch):
    """The review's misses: a filtered extract, five columns only, every age one year older."""
    assert _same_people(adult, adult_sketch, adult[adult["sex"] == "Female"]) >= 0.9
    assert _same_people(adult, adult_sketch, adult[["age", "sex", "race", "education", "income"]]) >= 0.9
    assert _same_people(adult, adult_sketch, adult.assign(age=adult["age"] + 1)) >= 0.9
    assert _same_people(adult, adult_sketch, adult.assign(workclass=adult["workclass"].str.upper())) >= 0.9


def test_a_table_of_two_datasets_is_refused(adult, tmp_path):
    from dpcore.budget.datasets import Catalog
    from dpcore.exceptions import DataError

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    first, second = adult.iloc[:1500], adult.iloc[1500:]
    assert catalog.open_table(lambda: [first], "A").created
    assert catalog.open_table(lambda: [second], "B").created
    with pytest.raises(DataError, match="several datasets"):
        catalog.open_table(lambda: [adult], "both")
    again = catalog.open_table(lambda: [first.sample(frac=1.0, random_state=2)], "A again")
    assert again.dataset.name == "A"


def test_a_separate_datasets_history_names_the_overlap_but_not_its_size(adult, tmp_path):
    from dpcore.budget.datasets import Catalog

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    catalog.open_table(lambda: [adult], "census")
    catalog.separate(lambda: [adult], "census, other households", "the 2021 survey")
    history = catalog.ledger(catalog.find("census, other households")).history()
    text = " ".join(history["what"].astype(str))
    assert "overlaps the rows of 'census'" in text and "%" not in text
    assert catalog._has_first_format_budgets() is False


# --- identity by people, not by keys (issue 28): privacy-tests.md row 21 ----------------------------


def _keyed(frame: pd.DataFrame, key: str, seed: int) -> pd.DataFrame:
    """A public table dressed as tables from the wild are: a row number or an ``id_000001`` code, and a split marker."""
    rows = np.arange(1, len(frame) + 1)
    ids = rows if key == "row" else np.char.add("id_", np.char.zfill(rows.astype(str), 6))
    split = np.where(np.random.default_rng(seed).random(len(frame)) < 0.8, "train", "test")
    return (
        frame.reset_index(drop=True)
        .assign(constant="v1", split=split)
        .set_axis([*frame.columns, "constant", "split"], axis=1)
        .pipe(lambda f: f.insert(0, "id", ids) or f)
    )


@pytest.fixture(scope="module")
def housing():
    from conftest import SAMPLE_DATA

    frame, _ = read_csv_path(SAMPLE_DATA / "california_housing.csv")
    return frame.head(3000)


@pytest.mark.parametrize("key", ["row", "code"])
def test_tables_that_share_only_keys_constants_and_a_split_marker_are_different_people(adult, housing, key):
    census, houses = _keyed(adult, key, 1), _keyed(housing, key, 2)
    census_sketch, houses_sketch = sketch_table(census), sketch_table(houses)
    assert census_sketch.keys[0] and houses_sketch.keys[0]
    assert overlap(census_sketch, houses_sketch, [houses]) == 0.0
    assert overlap(houses_sketch, census_sketch, [census]) == 0.0
    # The same split and row numbers on the very same rows of another table: still no evidence of people.
    assert overlap(houses_sketch, sketch_table(houses[["id", "split", "constant"]]), [houses[["id", "split"]]]) == 0.0


def test_the_same_people_still_match_with_keys_renamed_reordered_extracted_or_without_their_key(adult, housing):
    census = _keyed(adult, "code", 1)
    sketch = sketch_table(census)
    shuffled = census.sample(frac=1.0, random_state=4)
    assert overlap(sketch, sketch_table(shuffled), [shuffled]) >= 0.99
    renamed = census[census.columns[::-1]].rename(columns=str.upper)
    assert overlap(sketch, sketch_table(renamed), [renamed]) >= 0.99
    half = census.sample(frac=0.5, random_state=5)
    assert overlap(sketch, sketch_table(half), [half]) >= 0.9
    dropped = census.drop(columns=["id"])
    assert overlap(sketch, sketch_table(dropped), [dropped]) >= 0.99
    renumbered = shuffled.assign(id=np.arange(len(shuffled)))  # the file re-keyed: its people are the same
    assert overlap(sketch, sketch_table(renumbered), [renumbered]) >= 0.99
    houses = _keyed(housing, "row", 2)
    resaved = houses.assign(longitude=houses["longitude"].map(lambda v: f"{v:.4f}"))
    assert overlap(sketch_table(houses), sketch_table(resaved), [resaved]) >= 0.99


def test_keys_are_judged_from_the_data():
    rng = np.random.default_rng(0)
    n = 400
    frame = pd.DataFrame(
        {
            "row": np.arange(n),
            "code": [f"P{i:04d}" for i in rng.integers(0, 300, n)],
            "price": rng.random(n) * 1e5,
            "visit": pd.date_range("2020-01-01", periods=n, freq="5h").strftime("%Y-%m-%d %H:%M"),
            "street": rng.choice(["Pave", "Grvl"], n),
            "age": rng.integers(18, 90, n),
        }
    )
    keys = dict(zip(frame.columns, sketch_table(frame).keys, strict=True))
    # Row numbers and record codes are keys (even repeated); a unique price or a time of day describes its row.
    assert keys == {"row": True, "code": True, "price": False, "visit": False, "street": False, "age": False}
    counts = pd.DataFrame({"orders": rng.permutation(np.arange(n) * 97 + 7000), "weight": rng.permutation(n) + 5000})
    assert sketch_table(counts).keys == [False, True]  # unique counts spread wide are measured; a sequence numbers rows
    small = pd.DataFrame({"row": [3, 1, 2, 4, 5], "name": ["a", "b", "c", "d", "e"]})
    assert sketch_table(small).keys == [True, False]  # five rows are unique on anything: only a sequence is a key


def test_a_match_needs_two_informative_columns():
    a = pd.DataFrame({"row": np.arange(300), "height": np.arange(300) * 0.5 + 0.25, "flag": 1})
    assert overlap(sketch_table(a), sketch_table(a), [a]) == 0.0  # a key, one informative column and a constant
    b = a.assign(weight=np.arange(300) % 7)
    assert overlap(sketch_table(b), sketch_table(b), [b]) == 1.0


def test_a_sketch_stored_before_key_flags_still_loads_and_judges_by_the_new_table(adult, housing):
    from dpcore.budget.identity import TableSketch

    houses = _keyed(housing, "row", 2)
    stored = sketch_table(houses)
    stored.keys = None  # as every ledger written before the flags holds it
    old = TableSketch.from_bytes(stored.to_bytes())
    assert old.keys is None and old.rows == len(houses)
    census = _keyed(adult, "row", 1)
    assert overlap(old, sketch_table(census), [census]) == 0.0
    assert overlap(old, sketch_table(houses), [houses]) >= 0.99
    round_trip = TableSketch.from_bytes(sketch_table(houses).to_bytes())
    assert round_trip.keys == sketch_table(houses).keys


def test_unrelated_keyed_tables_open_as_two_datasets_and_a_refusal_offers_a_separate_dataset(adult, housing, tmp_path):
    from dpcore.budget.datasets import Catalog, OverlapRefused

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    houses, census = _keyed(housing, "code", 2), _keyed(adult, "code", 1)
    assert catalog.open_table(lambda: [houses], "houses").created
    opened = catalog.open_table(lambda: [census], "census")
    assert opened.created and opened.matched is None and opened.overlap == 0.0
    # The same people re-saved still spend one budget.
    again = catalog.open_table(lambda: [census.sample(frac=1.0, random_state=3).drop(columns=["id"])], "census again")
    assert again.dataset.name == "census" and not again.created
    # People of both datasets: refused, and the refusal's way out works (recorded with its reason).
    both = pd.concat([adult.iloc[:1500], adult.iloc[1500:]], ignore_index=True)
    first = Catalog(tmp_path / "two.sqlite3")
    first.open_table(lambda: [adult.iloc[:1500]], "A")
    first.open_table(lambda: [adult.iloc[1500:]], "B")
    with pytest.raises(OverlapRefused, match="several datasets"):
        first.open_table(lambda: [both], "both")
    second = first.separate(lambda: [both], "both", "a merged extract we keep apart, on purpose")
    assert second.created and second.dataset.name == "both"
    history = " ".join(first.ledger(second.dataset).history()["what"].astype(str))
    assert "overlaps the rows of 'A' and 'B'" in history or "overlaps the rows of 'B' and 'A'" in history
    assert "on purpose" in history
    # From then on the same rows open as the separate dataset, not refused again.
    assert first.open_table(lambda: [both.sample(frac=1.0, random_state=1)], "both again").dataset.name == "both"


def test_a_table_made_separate_after_it_was_attached_no_longer_counts_for_the_first_dataset(adult, tmp_path):
    from dpcore.budget.datasets import Catalog

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    catalog.open_table(lambda: [adult.iloc[:1500]], "census")
    attached = catalog.open_table(lambda: [adult], "bigger")
    assert attached.dataset.name == "census" and not attached.created
    separate = catalog.separate(lambda: [adult], "census, all", "another survey's households")
    # It names the census by the census's own rows (all of them are in the table), not by the table's earlier version.
    assert separate.created and separate.matched.name == "census" and separate.overlap == pytest.approx(1.0)
    assert catalog.open_table(lambda: [adult], "again").dataset.name == "census, all"
    assert catalog.open_table(lambda: [adult.iloc[:1500]], "first again").dataset.name == "census"


def test_the_same_count_of_yes_answers_is_not_the_same_person():
    """Row keys are salted by each matched column's place: 'yes, no' and 'no, yes' are different answers."""
    rng = np.random.default_rng(1)
    votes = pd.DataFrame(rng.choice(["y", "n"], size=(435, 16)), columns=[f"vote {i}" for i in range(16)])
    assert overlap(sketch_table(votes), sketch_table(votes), [votes]) == 1.0
    shuffled = pd.DataFrame(rng.permuted(votes.to_numpy(), axis=1), columns=votes.columns)  # each row's answers moved
    assert overlap(sketch_table(votes), sketch_table(shuffled), [shuffled]) < 0.05


def test_a_table_attached_by_mistake_and_then_made_separate_says_where_it_was(adult, housing, tmp_path):
    """The crime table of issue 28: attached to 'houses' (by an older ledger's keys), then made separate."""
    from dpcore.budget.datasets import Catalog

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    houses, census = _keyed(housing, "row", 2), _keyed(adult, "row", 1)
    catalog.open_table(lambda: [houses], "houses")
    assert catalog.open_table(lambda: [census], "crime", dataset="houses").dataset.name == "houses"  # attached
    separate = catalog.separate(lambda: [census], "crime", "crime reports are not households")
    assert separate.created and separate.matched.name == "houses" and separate.overlap == 0.0
    assert "opened before as 'houses'" in separate.sentence and "%" not in separate.sentence
    assert catalog.open_table(lambda: [census], "crime again").dataset.name == "crime"
    assert catalog.open_table(lambda: [houses], "houses again").dataset.name == "houses"
    joined = catalog.separate(lambda: [census.head(2000)], "houses", "joined on purpose")
    assert not joined.created and joined.dataset.name == "houses"
    assert "joined on purpose" in " ".join(catalog.ledger(joined.dataset).history()["what"].astype(str))


def test_a_sketch_built_chunk_by_chunk_is_the_sketch_of_the_whole_table(adult):
    from dpcore.budget.identity import SketchBuilder

    table = _keyed(adult, "code", 1)
    builder = SketchBuilder(table.columns)
    for start in range(0, len(table), 700):
        builder.add(table.iloc[start : start + 700])
    chunked, whole = builder.finish(), sketch_table(table)
    assert chunked.keys == whole.keys and chunked.rows == whole.rows
    assert all((a == b).all() for a, b in zip(chunked.values, whole.values, strict=True))
    assert all((a == b).all() for a, b in zip(chunked.counts, whole.counts, strict=True))
    assert (np.sort(chunked.sample_keys) == np.sort(whole.sample_keys)).all()


def test_numbers_kept_as_text_are_judged_as_numbers(adult):
    """A streamed table (the Spark engine's batches) reads every cell as text: its keys must be the same."""
    as_text = _keyed(adult, "code", 1).astype(str)
    assert sketch_table(as_text).keys == sketch_table(_keyed(adult, "code", 1)).keys
    padded = pd.DataFrame({"code": [f"{i:06d}" for i in range(1, 401)], "visits": np.arange(400) % 9})
    assert sketch_table(padded).keys == [True, False]


# --- columns edited with their headers kept (review B1) ----------------------------------------------


def _edited(frame: pd.DataFrame, columns: list[str], edit) -> pd.DataFrame:
    return frame.assign(**{column: edit(frame[column]) for column in columns})


def test_edited_columns_that_keep_their_headers_do_not_hide_the_same_people(adult, adult_sketch):
    """A column paired by its header alone may be an edit of every row: the content-matched columns match without it."""
    dotted = _edited(adult, ["income", "native-country"], lambda v: v.astype(str) + ".")  # as Adult's test file writes them
    assert _same_people(adult, adult_sketch, dotted) >= 0.99
    bumped = _edited(adult, ["age", "hours-per-week"], lambda v: v + 0.001)
    assert _same_people(adult, adult_sketch, bumped) >= 0.99
    cut = _edited(adult, ["workclass", "occupation"], lambda v: v.astype(str).str[:3])
    assert _same_people(adult, adult_sketch, cut) >= 0.99
    three = _edited(bumped, ["income", "native-country"], lambda v: v.astype(str) + ".")
    assert _same_people(adult, adult_sketch, three) >= 0.99  # four edited, all with their headers
    # Renaming the same columns scored 1.0 before; keeping their headers must not score less.
    assert _same_people(adult, adult_sketch, bumped.rename(columns={"age": "AGE 2", "hours-per-week": "hours 2"})) >= 0.99


def test_other_people_stay_other_people_when_their_columns_are_edited(adult, adult_sketch):
    from conftest import SAMPLE_DATA

    everyone, _ = read_csv_path(SAMPLE_DATA / "adult.csv")
    strangers = everyone.iloc[10_000:13_000]  # other people of the same census, headers all shared
    dotted = _edited(strangers, ["income", "native-country"], lambda v: v.astype(str) + ".")
    assert _same_people(adult, adult_sketch, dotted) < 0.05


def test_the_column_subsets_grow_linearly_with_the_width():
    from dpcore.budget.identity import MIN_EVIDENCE_COLUMNS, _column_subsets

    for by_content, by_header in [(0, 0), (1, 1), (2, 0), (1, 5), (2, 2), (40, 40), (0, 80), (79, 1)]:
        subsets = _column_subsets(by_content, by_header)
        width = by_content + by_header
        assert len(subsets) <= 2 * width + 2
        assert all(len(s) >= MIN_EVIDENCE_COLUMNS for s in subsets)
        if by_content >= MIN_EVIDENCE_COLUMNS:  # every header pair can be left out at once
            assert tuple(range(by_content)) in subsets


@settings(max_examples=30, deadline=None)
@given(by_content=st.integers(0, 6), by_header=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_subset_keys_built_from_running_sums_are_the_sums_of_their_columns(by_content, by_header, seed):
    from dpcore.budget.identity import _column_subsets, _subset_keys, _summed

    placed = list(np.random.default_rng(seed).integers(0, 2**64, size=(by_content + by_header, 50), dtype=np.uint64))
    subsets = _column_subsets(by_content, by_header)
    for subset, keys in zip(subsets, _subset_keys(placed, subsets, by_content), strict=True):
        assert (keys == _summed([placed[k] for k in subset])).all()


def test_a_table_with_two_columns_edited_keeps_its_spent_budget(adult, tmp_path):
    from dpcore.budget.datasets import Catalog

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    first = catalog.open_table(lambda: [adult], "census")
    catalog.ledger(first.dataset).spend("a model", 1.0)
    dotted = _edited(adult, ["income", "native-country"], lambda v: v.astype(str) + ".")
    again = catalog.open_table(lambda: [dotted], "census, re-exported")
    assert not again.created and again.dataset.name == "census" and again.overlap >= 0.99
    assert catalog.ledger(again.dataset).remaining == 0.0


def test_the_pairing_of_columns_is_the_solver_s_whether_or_not_the_solver_runs():
    """A clear best pairing is taken without scipy; it is the very pairing the solver gives, and ties go to it."""
    from scipy.optimize import linear_sum_assignment

    from dpcore.budget.identity import _assignment

    rng = np.random.default_rng(11)
    for shape in [(1, 1), (3, 3), (4, 7), (7, 4), (15, 15), (12, 16)]:
        for clear in (True, False):
            gain = rng.random(shape) * (0.1 if clear else 1.0)
            if clear:
                picks = rng.permutation(max(shape))[: min(shape)]
                for line, pick in enumerate(picks):
                    index = (line, pick) if shape[0] <= shape[1] else (pick, line)
                    gain[index] += 1.0
            rows, cols = _assignment(gain)
            expected = linear_sum_assignment(-gain)
            assert rows.tolist() == expected[0].tolist() and cols.tolist() == expected[1].tolist(), (shape, clear)
    tied = np.ones((3, 3))
    assert [a.tolist() for a in _assignment(tied)] == [a.tolist() for a in linear_sum_assignment(-tied)]
