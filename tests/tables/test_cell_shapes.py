"""What a text column's cells look like (dpcore.tables.cell_shapes)."""

from __future__ import annotations

import pandas as pd
import pytest

from dpcore.tables.cell_shapes import differ_only_in_case, in_natural_order, scale_in_name, written_dates, written_numbers


@pytest.mark.parametrize(
    ("cells", "numbers", "dates"),
    [
        (["$1,234.50", "$12.00", "$0.99"], True, False),
        (["12.5 %", "3%", "100%"], True, False),
        (["€ 30", "(1,200)", "-£5"], True, False),
        (["1,200", "15,000", "999"], True, False),
        (["1200", "15000", "999"], False, False),  # plain numbers: no sign, no grouping (the reader makes them numbers)
        (["2023-05-01", "2024/12/31", "01/05/2023"], False, True),
        (["2024-06-14T21:29:42Z", "2023-01-02 08:15", "2023-01-02 8:15 PM"], False, True),
        (["Paid", "Due", "Overdue"], False, False),
    ],
)
def test_the_shapes_of_amounts_and_dates(cells, numbers, dates):
    column = pd.Series(cells * 10, dtype="string")
    assert written_numbers(column) is numbers and written_dates(column) is dates


def test_a_few_odd_cells_do_not_change_the_shape_but_many_do():
    amounts = ["$10.00"] * 99
    assert written_numbers(pd.Series([*amounts, "n/a"]))  # 99 % of the cells
    assert not written_numbers(pd.Series(amounts[:90] + ["call us"] * 10))  # 90 %
    assert not written_numbers(pd.Series([1.5, 2.5]))  # numbers already


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
