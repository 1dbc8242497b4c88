"""PostgreSQL's rows read through ``COPY … TO STDOUT`` are the cursor's rows, cell for cell and chunk for chunk (issue 31)."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest

from dpcore.budget.datasets import Catalog
from dpcore.tables import sql_source
from dpcore.tables.sql_source import open_source

# Every type COPY reads, with the values that could read differently: NULL beside the empty text, text
# that looks like a number or a missing-value word, quotes, commas and newlines, padding, NaN and
# infinities, an integer past 2^53, a float4, a subnormal double.
AWKWARD = """
CREATE TABLE {schema}.awkward (
    line int PRIMARY KEY, words text, code varchar(8), padded char(6), small smallint, whole bigint,
    price numeric(14, 4), ratio real, measure double precision, label name
);
INSERT INTO {schema}.awkward VALUES
    (1, 'plain', '007', 'ab', 1, 9007199254740993, 12.3456, 0.1, 0.1, 'x'),
    (2, '', '', '', NULL, NULL, NULL, NULL, NULL, NULL),
    (3, NULL, NULL, NULL, -32768, -1, 'NaN', 'Infinity', '-Infinity', ''),
    (4, ' a, "quoted" value ', 'NA', 'N/A', 0, 0, 0.0001, 3.4028235e38, 1e-310, 'NULL'),
    (5, E'two\\nlines', '  12 ', 'ü', 7, 42, -99999999.9999, -0.5, 2.5e300, 'é'),
    (6, '\\N', '?', ' ', 2, 3, 1, 1.5, 1.0000000000000002, 'n'),
    (7, 'last', 'x', 'y', 3, 4, 2, 2.5, 3.5, 'z');
CREATE TABLE {schema}.mixed (line int, flag boolean, day date, words text);
INSERT INTO {schema}.mixed VALUES (1, true, '2024-02-29', 'a'), (2, NULL, NULL, NULL), (3, false, '1999-12-31', 'b');
"""


@pytest.fixture(scope="module")
def awkward(postgres_server):
    import psycopg

    schema = "copy_" + uuid.uuid4().hex[:12]
    with psycopg.connect(postgres_server.url(), autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}".encode())
        connection.execute(AWKWARD.format(schema=schema).encode())
    return postgres_server.url().replace("postgresql://", "postgresql+psycopg://", 1), schema


def _read(source, chunksize, monkeypatch, *, copy: bool) -> list[pd.DataFrame]:
    with monkeypatch.context() as patched:
        if not copy:
            patched.setattr(sql_source, "_copy_columns", lambda *_: None)
        return list(source.batches(chunksize))


@pytest.mark.parametrize("chunksize", [2, 3, 100])
def test_copy_reads_every_cell_and_chunk_as_the_cursor_does(awkward, monkeypatch, chunksize):
    url, schema = awkward
    columns = "words, code, padded, small, whole, price, ratio, measure, label"
    source = open_source(url, query=f"SELECT {columns} FROM {schema}.awkward ORDER BY line")
    copied = []
    monkeypatch.setattr(sql_source, "_copied_batches", _spy(sql_source._copied_batches, copied))
    by_copy, by_cursor = _read(source, chunksize, monkeypatch, copy=True), _read(source, chunksize, monkeypatch, copy=False)
    assert copied == [True]  # the first reading went through COPY, the second did not
    assert [len(c) for c in by_copy] == [len(c) for c in by_cursor]
    for fast, slow in zip(by_copy, by_cursor, strict=True):
        pd.testing.assert_frame_equal(fast, slow)


def test_copy_and_the_cursor_identify_one_dataset(awkward, monkeypatch, tmp_path):
    url, schema = awkward
    source = open_source(url, table=f"{schema}.awkward")
    fingerprints = set()
    for copy in (True, False):
        with monkeypatch.context() as patched:
            if not copy:
                patched.setattr(sql_source, "_copy_columns", lambda *_: None)
            fingerprints.add(Catalog(tmp_path / f"{copy}.sqlite3").identify(source.chunks(3)).fingerprint)
    assert len(fingerprints) == 1


def test_a_column_copy_does_not_read_goes_through_the_cursor(awkward, monkeypatch):
    url, schema = awkward
    copied: list[bool] = []
    monkeypatch.setattr(sql_source, "_copied_batches", _spy(sql_source._copied_batches, copied))
    [frame] = open_source(url, query=f"SELECT flag, day, words FROM {schema}.mixed ORDER BY line").batches()
    assert not copied
    assert frame["flag"].tolist()[::2] == ["True", "False"] and frame["day"].tolist()[::2] == ["2024-02-29", "1999-12-31"]


def test_an_empty_result_and_a_duplicate_name_read_as_through_the_cursor(awkward):
    url, schema = awkward
    assert list(open_source(url, query=f"SELECT words, small FROM {schema}.awkward WHERE line > 99").batches()) == []
    with pytest.raises(sql_source.DataError, match="the same name"):
        list(open_source(url, query=f"SELECT words, words FROM {schema}.awkward").batches())


def _spy(function, calls):
    def spied(*args, **kwargs):
        calls.append(True)
        return function(*args, **kwargs)

    return spied
