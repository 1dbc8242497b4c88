"""No download button reruns the page: a download changes nothing the page shows.

Streamlit makes a deferred file (``data`` given as a function) when the browser asks for it, and a
click on a download button reruns the page unless ``on_click="ignore"``. That rerun registers the
button's maker afresh and drops the old one; on a busy server the browser's request can arrive after
the drop, and the download silently never starts (seen as 180 s download timeouts in CI). A file given
as bytes is kept across the rerun, but the rerun redraws the buttons under the next click (a later
180 s timeout on the comparison's CSV): every download button leaves the page as it is.
"""

from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "dpstudio"


def _downloads_that_rerun() -> list[str]:
    found = []
    for path in sorted(APP.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "download_button"):
                continue
            keywords = {keyword.arg: keyword.value for keyword in node.keywords}
            on_click = keywords.get("on_click")
            ignored = isinstance(on_click, ast.Constant) and on_click.value == "ignore"
            if not ignored:
                found.append(f"{path.relative_to(APP.parent)}:{node.lineno}")
    return found


def test_every_download_leaves_the_page_as_it_is():
    assert _downloads_that_rerun() == []
