"""KeptRows: a database's chunks kept as first read give back the same frames, then are removed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dpcore.release.buffers import KeptRows

TEXT = pd.StringDtype("pyarrow", na_value=np.nan)


def _chunks() -> list[pd.DataFrame]:
    return [
        pd.DataFrame({"ward": pd.Series(["a", None, " b"], dtype=TEXT), "age": [1.0, np.nan, 3.5]}),
        # A chunk whose text column is all missing comes as numbers (the readers' rule): its own kind is kept.
        pd.DataFrame({"ward": [np.nan, np.nan], "age": [4.0, 5.0]}),
    ]


def test_the_kept_chunks_are_the_chunks_read_and_go_when_closed():
    kept = KeptRows()
    passed = list(kept.keep(iter(_chunks())))
    for again in (list(kept.chunks()), list(kept.chunks())):
        for got, read in zip(again, passed, strict=True):
            pd.testing.assert_frame_equal(got, read)
    [first, second] = kept.chunks(["age"])
    assert list(first.columns) == ["age"] and second["age"].tolist() == [4.0, 5.0]
    kept.close()
    assert not kept.folder.exists()


def test_rows_not_all_kept_are_not_read_back():
    kept = KeptRows()
    reading = kept.keep(iter(_chunks()))
    next(reading)  # a reading stopped after its first chunk
    with pytest.raises(RuntimeError):
        list(kept.chunks())
    assert len(list(kept.keep(iter(_chunks())))) == 2 and len(list(kept.chunks())) == 2  # read again from the start
    kept.close()
