"""What a text column's cells look like (dpcore.tables.cell_shapes)."""

from __future__ import annotations

import pandas as pd
import pytest

from dpcore.tables.cell_shapes import AMOUNTS, DATES, differ_only_in_case, in_natural_order, scale_in_name, text_shape


@pytest.mark.parametrize(
    ("cells", "shape"),
    [
        (["$1,234.50", "$12.00", "$0.99"], AMOUNTS),
        (["12.5 %", "3%", "100%"], AMOUNTS),
        (["€ 30", "(1,200)", "-£5"], AMOUNTS),
        (["1,200", "15,000", "999"], AMOUNTS),
        (["1200", "15000", "999"], None),  # plain numbers: no sign, no grouping (the reader makes them numbers)
        (["2023-05-01", "2024/12/31", "01/05/2023"], DATES),
        (["2024-06-14T21:29:42Z", "2023-01-02 08:15", "2023-01-02 8:15 PM"], DATES),
        (["1.12.45", "2.0.1", "10.4.12"], None),  # versions, not dates
        (["Paid", "Due", "Overdue"], None),
    ],
)
def test_the_shapes_of_amounts_and_dates(cells, shape):
    assert text_shape(pd.Series(cells * 10, dtype="string")) == shape


def test_a_few_odd_cells_do_not_change_the_shape_but_many_do():
    amounts = ["$10.00"] * 99
    assert text_shape(pd.Series([*amounts, "n/a"])) == AMOUNTS  # 99 % of the cells
    assert text_shape(pd.Series(amounts[:90] + ["call us"] * 10)) is None  # 90 %
    assert text_shape(pd.Series([1.5, 2.5])) is None  # numbers already


def test_categories_keep_the_order_a_reader_expects():
    assert in_natural_order(["Agree", "Disagree", "Strongly agree", "Neutral"]) == [
        "Disagree",
        "Neutral",
        "Agree",
        "Strongly agree",
    ]
    assert in_natural_order(["often", "Never", "sometimes"]) == ["Never", "sometimes", "often"]
    assert in_natural_order(["10%", "5%", "0%"]) == ["0%", "5%", "10%"]
    assert in_natural_order(["Grade 10", "Grade 9"]) == ["Grade 9", "Grade 10"]
    assert in_natural_order(["-5", "0", "-10"]) == ["-10", "-5", "0"]
    assert in_natural_order(["b", "A", "7"]) == ["7", "A", "b"]  # not every one a number: the alphabet


def test_spellings_that_differ_only_in_capitals_or_spaces():
    assert differ_only_in_case(["web", "Web", "store"]) and differ_only_in_case(["IT", " it"])
    assert not differ_only_in_case(["web", "store"]) and not differ_only_in_case([])


def test_a_scale_stated_in_a_header():
    assert scale_in_name("Overall satisfaction (1-10)") == (1.0, 10.0)
    assert scale_in_name("Pain [0–100]") == (0.0, 100.0) and scale_in_name("Rating (1 to 5)") == (1.0, 5.0)
    assert scale_in_name("temperature (-40-60)") == (-40.0, 60.0)
    assert scale_in_name("score (10-1)") is None and scale_in_name("Income (USD)") is None and scale_in_name("x") is None
