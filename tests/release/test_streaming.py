"""Releasing a CSV file chunk by chunk (dpcore.release.streaming)."""

from __future__ import annotations

import pytest
from release_testing import COLOURS, adult_table, plan_with, small_schema

from dpcore import release as R
from dpcore.exceptions import DataError
from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import ColumnSpec, Schema


def test_streaming_equals_in_memory_for_a_seed(tmp_path, monkeypatch):
    frame, schema = adult_table()
    source = tmp_path / "adult_part.csv"
    frame.head(5000).to_csv(source, index=False)
    subset, _ = read_csv_path(source)
    plan = R.default_plan(schema)
    plan["capital-gain"].mechanism, plan["capital-gain"].bins = "laplace", None
    plan["race"].missing = "category"
    expected = R.release_table(subset, schema, plan, random_state=2024).csv
    for chunksize in (333, 1000, 4096, 100_000):
        R.release_csv(source, tmp_path / f"out{chunksize}.csv", schema, plan, random_state=2024, chunksize=chunksize)
        assert (tmp_path / f"out{chunksize}.csv").read_bytes() == expected, chunksize
    other = R.release_table(subset, schema, plan, random_state=2025).csv
    assert other != expected


def test_non_utf8_input(tmp_path):
    schema = Schema(
        [
            ColumnSpec("city", kind="categorical", categories=["Café", "Zürich", "Köln"]),
            ColumnSpec("n", kind="numeric", lower=0, upper=10),
        ]
    )
    text = "city;n\n" + "".join(f"{c};{i % 10}\n" for i, c in enumerate(["Café", "Zürich", "Köln"] * 200))
    source = tmp_path / "latin.csv"
    source.write_bytes(text.encode("latin-1"))
    plan = R.default_plan(schema)
    result = R.release_csv(source, tmp_path / "out.csv", schema, plan, random_state=6)
    frame, facts = read_csv_path(source)
    assert facts["encoding"] == "latin-1"
    assert (tmp_path / "out.csv").read_bytes() == R.release_table(frame, schema, plan, random_state=6).csv
    assert not any("declared categories" in str(note) for note in result.notes)
    assert set(R.read_release(tmp_path / "out.csv")["city"]) <= {"Café", "Zürich", "Köln", "(missing)"}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty"),
        (b"   \n\n", "empty"),
        (b"smoker,colour\n", "no data rows"),
        (b"PK\x03\x04\x00\x00binary", "binary"),
        (b"smoker,colour\nno,red\nSECRET-CELL,blue,extra\n", "different number of fields"),
    ],
)
def test_unreadable_files_raise_sentences(tmp_path, content, message):
    source = tmp_path / "in.csv"
    source.write_bytes(content)
    schema = Schema(
        [
            ColumnSpec("smoker", kind="categorical", categories=["no", "yes"]),
            ColumnSpec("colour", kind="categorical", categories=COLOURS),
        ]
    )
    with pytest.raises(DataError, match=message) as caught:
        R.release_csv(source, tmp_path / "out.csv", schema, R.default_plan(schema), random_state=1)
    assert "SECRET" not in str(caught.value)
    assert not (tmp_path / "out.csv").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.csv"]


def test_planned_column_missing_from_the_file(tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("smoker,other\nno,1\n")
    with pytest.raises(DataError, match="'colour'"):
        R.release_csv(source, tmp_path / "out.csv", small_schema(), plan_with(colour={"mechanism": "k-ary", "epsilon": 1.0}))


def test_a_table_in_parquet_files_streams_to_its_in_memory_copy(tmp_path, monkeypatch):
    """Rows keyed by file and row: the streamed copy of a folder of Parquet files is the in-memory one, padded or cut."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from release_testing import small_frame

    from dpcore.backends.tables import read_table_local
    from dpcore.budget.accountant import ADD_REMOVE
    from dpcore.release import streaming

    monkeypatch.setattr(streaming, "SHUFFLE_BUCKET_BYTES", 20_000)  # several buckets
    frame = small_frame(3000)
    (tmp_path / "table").mkdir()
    for i in range(3):
        part = frame.iloc[i * 1000 : (i + 1) * 1000].reset_index(drop=True)
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), tmp_path / "table" / f"p{i}.parquet")
    plan = plan_with(colour={"mechanism": "k-ary", "epsilon": 1.0}, score={"mechanism": "laplace", "epsilon": 1.0})
    whole, keys = read_table_local(tmp_path / "table")
    for seed in (3, 5):  # five fillers; 74 rows cut
        result = R.release_files(
            tmp_path / "table", tmp_path / "out.csv", small_schema(), plan, unit=ADD_REMOVE, random_state=seed
        )
        expected = R.release_table(whole, small_schema(), plan, unit=ADD_REMOVE, random_state=seed, row_keys=keys)
        assert (tmp_path / "out.csv").read_bytes() == expected.csv
        assert result.n_rows == expected.n_rows == len(expected.table)
