"""Translation of every user-facing sentence (English and Vietnamese, issue 19).

Wrap a user-facing literal in ``_()`` where it is written, with named fields filled afterwards
(``_("Spent {epsilon} of {total}").format(epsilon=..., total=...)``), so the extractor finds it.
Machine-readable text (JSON keys, CSV headers, log lines) is never wrapped.
"""

from __future__ import annotations


def _(message: str) -> str:
    """Return ``message`` in the current language (English until the catalogs land)."""
    return message
