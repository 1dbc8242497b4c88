"""Spreadsheet-safe text in the released file (dpcore.release.writing)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd

from dpcore import release as R
from dpcore.tables.schema import ColumnSpec, Schema


def test_formula_cells_are_escaped_and_numbers_untouched():
    schema = Schema(
        [
            ColumnSpec("=note", kind="categorical", public=True),
            ColumnSpec("balance", kind="numeric", lower=-10, upper=10, public=True),
            ColumnSpec("tag", kind="categorical", categories=["=cmd()", "-5", "@home", "ok"]),
        ]
    )
    texts = ["=SUM(A1:A9)", "+cmd", "-5", "-2.5e3", "@home", "\tx", "\rcarriage", "plain", "-x", "a=b"]
    frame = pd.DataFrame({"=note": texts, "balance": np.arange(-5, 5), "tag": ["=cmd()", "-5", "@home", "ok", "ok"] * 2})
    plan = R.ReleasePlan(
        [R.ColumnPlan("=note", "keep"), R.ColumnPlan("balance", "keep"), R.ColumnPlan("tag", "k-ary", epsilon=50.0)]
    )
    result = R.release_table(frame, schema, plan, random_state=0)
    table = result.table
    assert list(table.columns) == ["'=note", "balance", "tag"]
    assert sorted(table["'=note"].tolist()) == sorted(
        [
            "'=SUM(A1:A9)",
            "'+cmd",
            "-5",
            "-2.5e3",
            "'@home",
            "'\tx",
            "'\rcarriage",
            "plain",
            "'-x",
            "a=b",
        ]
    )
    assert sorted(table["balance"].tolist()) == sorted(str(v) for v in range(-5, 5))
    assert R.report_entry(result.report, "tag")["domain"] == ["'=cmd()", "-5", "'@home", "ok"]
    assert set(table["tag"]) <= {"'=cmd()", "-5", "'@home", "ok"}
    assert any("declared it public" in w for w in result.report["warnings"])
    # The file round-trips through a plain CSV reader.
    assert len(pd.read_csv(io.BytesIO(result.csv))) == 10
