"""Dataset identity: fingerprints and overlap sketches that survive re-saves, reorders and renames."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpcore.identity import cell_hashes, overlap, sketch_table, version_fingerprint
from dpcore.loading import read_csv_bytes, read_csv_path


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
    names = data.draw(st.lists(st.text("abcdefghij_ XYZ", min_size=1, max_size=12), min_size=len(columns),
                               max_size=len(columns), unique=True))
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


def test_extracts_narrow_exports_and_next_years_file_are_the_same_people(adult, adult_sketch):
    """The review's misses: a filtered extract, five columns only, every age one year older."""
    assert _same_people(adult, adult_sketch, adult[adult["sex"] == "Female"]) >= 0.9
    assert _same_people(adult, adult_sketch, adult[["age", "sex", "race", "education", "income"]]) >= 0.9
    assert _same_people(adult, adult_sketch, adult.assign(age=adult["age"] + 1)) >= 0.9
    assert _same_people(adult, adult_sketch, adult.assign(workclass=adult["workclass"].str.upper())) >= 0.9


def test_a_table_of_two_datasets_is_refused(adult, tmp_path):
    from dpcore.datasets import Catalog
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
    from dpcore.datasets import Catalog

    catalog = Catalog(tmp_path / "ledger.sqlite3")
    catalog.open_table(lambda: [adult], "census")
    catalog.separate(lambda: [adult], "census, other households", "the 2021 survey")
    history = catalog.ledger(catalog.find("census, other households")).history()
    text = " ".join(history["what"].astype(str))
    assert "overlaps the rows of 'census'" in text and "%" not in text
    assert catalog._has_first_format_budgets() is False
