"""Where a number a page must not show appears in its text as a number of its own (plain or grouped)."""

from __future__ import annotations

import re


def mentions_of(number: int, text: str, context: int = 60) -> list[str]:
    """The passages of ``text`` holding ``number`` as a number of its own: plain, or grouped by a comma, a dot or a
    narrow no-break space, but not its digits inside another number (a standard deviation of 0.021229… holds 1229)."""
    grouped = f"{number:,}"
    forms = {str(number), grouped, grouped.replace(",", "."), grouped.replace(",", "\u202f")}
    pattern = rf"(?<![\d.,])(?:{'|'.join(re.escape(form) for form in sorted(forms, key=len, reverse=True))})(?!\d)"
    return [text[max(found.start() - 2 * context, 0) : found.end() + context] for found in re.finditer(pattern, text)]
