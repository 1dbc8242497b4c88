"""Tables read in parts: the file order, the row keys, and design numbers that do not depend on the part."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpcore.backends import tables
from dpcore.exceptions import DataError
from dpcore.mechanisms.keyed import file_row_keys
from dpcore.tables.design import Design
from dpcore.tables.schema import ColumnSpec, Schema


def messy_frame(n: int, seed: int = 0) -> pd.DataFrame:
    """Missing numbers and labels, undeclared categories, integer-coded categories, an identifier."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(
        {
            "age": rng.integers(10, 90, n).astype(float),
            "city": rng.choice(["north", "south", "east", None], n),
            "code": rng.integers(1, 4, n),
            "income": rng.lognormal(3, 1, n),
            "id": np.arange(n),
            "label": rng.choice(["yes", "no", "maybe"], n),
        }
    )
    frame.loc[::7, "age"] = np.nan
    frame.loc[::11, "income"] = np.nan
    return frame


def messy_schema(target: str = "income") -> Schema:
    columns = [
        ColumnSpec("age", lower=0, upper=100),
        ColumnSpec("city", kind="categorical", categories=["north", "south"]),
        ColumnSpec("code", kind="categorical", categories=["1", "2"]),
        ColumnSpec("income", lower=0, upper=100),
        ColumnSpec("id", role="identifier"),
        ColumnSpec("label", kind="categorical", categories=["yes", "no"]),
    ]
    for spec in columns:
        spec.role = "target" if spec.name == target else "ignore" if spec.name in ("income", "label") else spec.role
    return Schema(columns)


def write_parts(frame: pd.DataFrame, folder, kind: str, parts: int = 3) -> None:  # noqa: ANN001
    folder.mkdir(parents=True, exist_ok=True)
    for i, part in enumerate(np.array_split(np.arange(len(frame)), parts)):
        piece = frame.iloc[part]
        if kind == "parquet":
            pq.write_table(pa.Table.from_pandas(piece, preserve_index=False), folder / f"part-{i}.parquet", row_group_size=64)
        else:
            piece.to_csv(folder / f"part-{i}.csv", index=False)


def test_files_are_listed_in_one_order_and_bad_sources_get_a_sentence(tmp_path):
    write_parts(messy_frame(30), tmp_path / "t", "parquet")
    (tmp_path / "t" / "_SUCCESS").write_text("")
    files = tables.list_table_files(tmp_path / "t")
    assert [f.rsplit("/", 1)[1] for f in files] == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    assert tables.list_table_files(files[1]) == [files[1]]
    with pytest.raises(DataError, match="No table files"):
        tables.list_table_files(tmp_path / "nothing*.csv")
    (tmp_path / "t" / "extra.csv").write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="mix Parquet and CSV"):
        tables.list_table_files(tmp_path / "t")


@pytest.mark.parametrize("kind", ["parquet", "csv"])
@pytest.mark.parametrize("target", ["income", "label"])
def test_local_rows_are_the_design_of_the_whole_table_keyed_by_file_and_row(tmp_path, kind, target):
    frame, schema = messy_frame(300), messy_schema(target)
    write_parts(frame, tmp_path / kind, kind)
    source = tmp_path / kind if kind == "parquet" else tmp_path / kind / "*.csv"
    cells, keys = tables.read_table_local(source)
    assert np.array_equal(keys, np.concatenate([file_row_keys(i, 0, 100) for i in range(3)]))
    reference = Design.from_table(cells, schema)
    rows = tables.read_rows_local(source, schema)
    assert np.array_equal(rows.X, reference.X) and np.array_equal(rows.y, reference.y)
    _X, _y, keep = tables.design_batch(cells, schema)
    assert np.array_equal(rows.key, keys[keep])


def test_design_batch_is_row_by_row_whatever_the_part(tmp_path):
    """An integer-coded category reads "1" in a part with a missing value as in one without."""
    frame, schema = messy_frame(200), messy_schema()
    frame["code"] = pd.array(frame["code"], dtype="Int64")
    frame.loc[150, "code"] = pd.NA
    cells = pa.Table.from_pandas(frame, preserve_index=False)
    whole = Design.from_table(tables.arrow_frame(cells), schema)
    parts = [tables.design_batch(tables.arrow_frame(batch), schema) for batch in cells.to_batches(max_chunksize=50)]
    assert np.array_equal(np.concatenate([p[0] for p in parts]), whole.X)
    assert np.array_equal(np.concatenate([p[1] for p in parts]), whole.y)
    assert (whole.X[:, 2] == 0).any()  # code "1" matched its declared category


def test_domain_is_the_designs_domain_without_rows():
    frame, schema = messy_frame(200), messy_schema("label")
    domain, design = Design.domain(schema, "onehot"), Design.from_table(frame, schema, "onehot")
    assert domain.feature_names == design.feature_names and domain.classes == design.classes
    assert all(np.array_equal(a, b) for a, b in zip(domain.bounds, design.bounds))
    assert domain.context(1.0).n_features == design.context(1.0).n_features and domain.task == "classification"


def test_a_privacy_unit_is_refused_with_a_sentence(tmp_path):
    write_parts(messy_frame(60), tmp_path / "t", "parquet")
    schema = messy_schema()
    schema.privacy_unit, schema.rows_per_person = "id", 2
    with pytest.raises(DataError, match="privacy-unit"):
        tables.read_rows_local(tmp_path / "t", schema)
