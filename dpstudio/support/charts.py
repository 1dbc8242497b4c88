"""Charts in the reader's language: Vega's number format follows the session's locale (1.000,5 in Vietnamese)."""

from __future__ import annotations

import altair as alt
from babel.numbers import get_decimal_symbol, get_group_symbol

from dpcore.i18n import get_language


def localized(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """``chart`` with axis ticks and tooltips written with the language's decimal and thousands separators."""
    code = get_language()
    return chart.configure(
        locale={
            "number": {
                "decimal": get_decimal_symbol(code),
                "thousands": get_group_symbol(code),
                "grouping": [3],
                "currency": ["", ""],
            }
        }
    )
