"""A new server's first page: the sidebar lists the pages by their titles from the start, never by file name."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser


def test_the_sidebar_never_shows_file_names(browser, server):
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    try:
        page = context.new_page()
        page.goto(server, wait_until="commit")
        links = page.locator("[data-testid='stSidebarNavLink']")
        links.first.wait_for(timeout=180_000)
        first = [text.split("\n")[-1] for text in links.all_inner_texts()]
        assert first[:1] == ["1. Data"], first  # not 'app', 'attack', 'compare'… (the files in dpstudio/pages)
    finally:
        context.close()
