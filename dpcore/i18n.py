"""Translation of every user-facing sentence, and numbers and dates written for the reader's language (issue 19).

Wrap a user-facing literal in ``_()`` where it is written, with named fields filled afterwards
(``_("Spent {epsilon} of {total}").format(epsilon=..., total=...)``), so the extractor finds it.
A sentence defined at import time (a module constant, a dict of labels) is marked with
:func:`N_` and translated where it is shown (``_(PROMISE)``), because the language is only
known then. Machine-readable text (JSON keys, CSV headers, registry ids, log lines) is never
wrapped.

The catalogs are GNU gettext ``.po`` files under ``dpcore/locale/<language>/LC_MESSAGES/``,
compiled with Babel the first time a language is used (so a checkout, an editable install and a
wheel all read the same files, with no build step to forget). English is the source language
and needs no catalog. How to add a language: README.md, "Languages: English and Tiếng Việt".

The current language is a :class:`contextvars.ContextVar`: each Streamlit session's script run
and each command-line call sets its own (:func:`set_language`, :func:`language`), so two
people using the app at once never see each other's choice.
"""

from __future__ import annotations

import contextvars
import gettext
import io
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date, datetime
from decimal import Decimal
from functools import cache
from pathlib import Path

DOMAIN = "dpstudio"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
SOURCE_LANGUAGE = "en"
#: The languages DP Studio speaks, each named in itself (as the language switch shows them).
LANGUAGES = {"en": "English", "vi": "Tiếng Việt"}

_language: contextvars.ContextVar[str] = contextvars.ContextVar("dpstudio_language", default=SOURCE_LANGUAGE)


def supported(tag: str | None) -> str | None:
    """The language of ours that a locale tag names (``vi-VN``, ``vi_VN.UTF-8``, ``en``), or None."""
    if not tag:
        return None
    code = str(tag).strip().replace("-", "_").split(".")[0].split("@")[0].split("_")[0].lower()
    return code if code in LANGUAGES else None


def language_from_environment() -> str:
    """The language the environment asks for (``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``), else English."""
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        for tag in os.environ.get(variable, "").split(":"):
            found = supported(tag)
            if found:
                return found
    return SOURCE_LANGUAGE


def set_language(tag: str | None) -> str:
    """Use the language ``tag`` names (English when it is none of ours) in this context; return the code used."""
    code = supported(tag) or SOURCE_LANGUAGE
    _language.set(code)
    return code


def get_language() -> str:
    """The code of the language in use in this context (``en`` or ``vi``)."""
    return _language.get()


@contextmanager
def language(tag: str | None) -> Iterator[str]:
    """Speak the language ``tag`` names inside a ``with`` block, and the previous one after it."""
    token = _language.set(supported(tag) or SOURCE_LANGUAGE)
    try:
        yield _language.get()
    finally:
        _language.reset(token)


def catalog_path(code: str) -> Path:
    return LOCALE_DIR / code / "LC_MESSAGES" / f"{DOMAIN}.po"


@cache
def translations(code: str) -> gettext.NullTranslations:
    """The compiled catalog of language ``code`` (loaded once per process; never changed after)."""
    path = catalog_path(code)
    if code == SOURCE_LANGUAGE or not path.is_file():
        return gettext.NullTranslations()
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    with path.open("rb") as source:
        catalog = read_po(source, locale=code, domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def _(message: str) -> str:
    """Return ``message`` in the current language (itself when the catalog has no translation)."""
    return translations(_language.get()).gettext(message)


def ngettext(singular: str, plural: str, count: int) -> str:
    """The singular or plural sentence for ``count``, in the current language (fill ``{count}`` afterwards)."""
    return translations(_language.get()).ngettext(singular, plural, count)


def N_(message: str) -> str:
    """Mark a sentence for the catalog without translating it yet (it is translated where it is shown)."""
    return message


# --- numbers and dates in the reader's language (Babel) ---------------------------------------


def _locale() -> str:
    return _language.get()


def integer(value: float) -> str:
    """A whole number with the language's thousands separator: 20,640 in English, 20.640 in Vietnamese."""
    from babel.numbers import format_decimal

    return format_decimal(int(round(value)), format="#,##0", locale=_locale())


def decimal(value: float, digits: int = 2, group: bool = True) -> str:
    """``value`` with at most ``digits`` decimals: 1,234.57 in English, 1.234,57 in Vietnamese."""
    from babel.numbers import format_decimal

    if not math.isfinite(value):
        return "?"
    pattern = ("#,##0" if group else "0") + ("." + "#" * digits if digits > 0 else "")
    return format_decimal(value, format=pattern, locale=_locale())


def fixed(value: float, digits: int = 2) -> str:
    """``value`` with exactly ``digits`` decimals (the ``:.2f`` of the language), thousands grouped."""
    from babel.numbers import format_decimal

    if not math.isfinite(value):
        return "?"
    pattern = "#,##0" + ("." + "0" * digits if digits > 0 else "")
    return format_decimal(value, format=pattern, locale=_locale())


def short(value: float) -> str:
    """The ``:g`` of the language: six significant digits, no trailing zeros (ε = 0.5 → "0,5" in Vietnamese)."""
    from babel.numbers import format_decimal, get_decimal_symbol

    if not math.isfinite(value):
        return "∞" if value == math.inf else "?"
    text = f"{value:g}"
    if "e" in text:
        mantissa, exponent = text.split("e")
        return mantissa.replace(".", get_decimal_symbol(_locale())) + "e" + exponent
    return format_decimal(Decimal(text), locale=_locale(), decimal_quantization=False, group_separator=False)


def short_left(value: float) -> str:
    """What is left of a budget, as :func:`short` says it, but "< 0.0001" for a sliver (a newcomer read "3.9999e-05 left"
    as nonsense): nothing that small buys anything."""
    if 0 < value < 1e-4:
        return "< " + short(1e-4)
    return short(value)


def amount(text: str) -> str:
    """An exact amount already written as plain text (the ledger's ``fmt``: 1.198612289, 1e-05) with the language's decimal sign."""
    from babel.numbers import get_decimal_symbol

    return text.replace(".", get_decimal_symbol(_locale()))


def percent(share: float, digits: int = 0) -> str:
    """A share (0.123) as a percentage of the language: 12% / 12,3 %."""
    from babel.numbers import format_percent

    if not math.isfinite(share):
        return "?"
    pattern = "#,##0" + ("." + "0" * digits if digits > 0 else "") + "%"
    return format_percent(share, format=pattern, locale=_locale())


def day(value: date | datetime) -> str:
    """A date written the language's way (Nov 24, 2026 / 24 thg 11, 2026)."""
    from babel.dates import format_date

    return format_date(value, format="medium", locale=_locale())


def moment(value: datetime) -> str:
    """A date and time written the language's way."""
    from babel.dates import format_datetime

    return format_datetime(value, format="medium", locale=_locale())
