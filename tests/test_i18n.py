"""English and Vietnamese (issue 19): every sentence in the catalog, none bypassing it, and the language per context."""

from __future__ import annotations

import ast
import re
import string
import sys
import threading
from datetime import date
from pathlib import Path

import pytest

from dpcore import i18n
from dpcore.i18n import _, language

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from catalogs import LOCALE, extract, missing, read  # noqa: E402


@pytest.fixture(scope="module")
def template():
    return extract()


@pytest.fixture(scope="module")
def vietnamese():
    return read(LOCALE / "vi" / "LC_MESSAGES" / "dpstudio.po", "vi")


def test_every_translatable_sentence_has_a_vietnamese_translation(template, vietnamese):
    gaps = missing(vietnamese, template)
    assert not gaps, (
        f"{len(gaps)} of {len(template)} sentences lack a Vietnamese translation (python scripts/catalogs.py, "
        "then translate them in dpcore/locale/vi/LC_MESSAGES/dpstudio.po): " + "; ".join(g[:70] for g in gaps[:15])
    )


def test_every_language_of_the_switch_has_a_complete_catalog(template):
    from catalogs import languages

    assert set(languages()) == set(i18n.LANGUAGES) - {i18n.SOURCE_LANGUAGE}
    for code in languages():
        assert not missing(read(LOCALE / code / "LC_MESSAGES" / "dpstudio.po", code), template), code


def _fields(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def test_every_translation_keeps_the_named_fields_of_its_sentence(vietnamese):
    """A translation that drops or renames a ``{field}`` would raise KeyError (or lose a number) on a Vietnamese page."""
    wrong = []
    for message in vietnamese:
        if not message.id or not message.string:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        expected = set().union(*(_fields(i) for i in ids))
        wrong += [ids[0][:60] for s in strings if s and _fields(s) != expected and _fields(s) != _fields(ids[0])]
    assert not wrong, wrong


def test_the_catalog_compiles_and_translates(vietnamese):
    with language("vi"):
        assert _("Privacy budget") == "Ngân sách quyền riêng tư"
        assert _("a sentence no catalog has") == "a sentence no catalog has"
    assert _("Privacy budget") == "Privacy budget"


def test_the_glossary_terms_are_used_in_the_catalog(vietnamese):
    """The issue's terminology, as docs/glossary_vi.md fixes it, is what the catalog says."""
    text = " ".join(m.string for m in vietnamese if isinstance(m.string, str))
    for term in ("quyền riêng tư vi phân", "ngân sách quyền riêng tư", "cơ chế Laplace", "cơ chế mũ", "phản hồi ngẫu nhiên"):
        assert term in text.lower() or term in text, term
    glossary = (REPO / "docs" / "glossary_vi.md").read_text(encoding="utf-8")
    for term in ("quyền riêng tư vi phân", "ngân sách quyền riêng tư", "độ nhạy cảm", "rừng ngẫu nhiên", "cây quyết định"):
        assert term in glossary


def test_numbers_and_dates_follow_the_language():
    with language("vi"):
        assert i18n.integer(20640) == "20.640"
        assert i18n.decimal(1234.5) == "1.234,5"
        assert i18n.short(0.5) == "0,5"
        assert i18n.percent(0.125, 1) == "12,5%"
        assert "2026" in i18n.day(date(2026, 11, 24)) and "thg 11" in i18n.day(date(2026, 11, 24))
    assert i18n.integer(20640) == "20,640" and i18n.short(0.5) == "0.5" and i18n.decimal(1234.5) == "1,234.5"


def test_locale_tags_map_to_our_languages(monkeypatch):
    assert i18n.supported("vi-VN") == "vi" and i18n.supported("vi_VN.UTF-8") == "vi" and i18n.supported("en-GB") == "en"
    assert i18n.supported("fr-FR") is None and i18n.supported(None) is None
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LANG", "vi_VN.UTF-8")
    assert i18n.language_from_environment() == "vi"


def test_each_thread_keeps_its_own_language():
    """Two Streamlit sessions run in two threads: one's switch never changes the other's pages."""
    seen: dict[str, str] = {}
    ready = threading.Barrier(2)

    def session(code: str) -> None:
        i18n.set_language(code)
        ready.wait()
        seen[code] = _("Privacy budget")

    threads = [threading.Thread(target=session, args=(code,)) for code in ("en", "vi")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"en": "Privacy budget", "vi": "Ngân sách quyền riêng tư"}


def test_the_command_line_speaks_vietnamese_with_lang_vi(capsys, tmp_path):
    from dpcore.cli import main

    assert main(["--lang", "vi", "plan", "--schema", str(tmp_path / "missing.json"), "-o", str(tmp_path / "p.json")]) == 2
    vietnamese = capsys.readouterr().err
    assert main(["plan", "--schema", str(tmp_path / "missing.json"), "-o", str(tmp_path / "p.json")]) == 2
    english = capsys.readouterr().err
    assert vietnamese != english and "does not exist" in english
    assert i18n.get_language() == "en"  # the call's language does not outlive the call


# --- the static check: no user-facing literal bypasses the catalog --------------------------------

#: Streamlit calls whose text a person reads (positional text and these keywords).
SHOWN = {
    "title",
    "header",
    "subheader",
    "markdown",
    "write",
    "caption",
    "text",
    "info",
    "warning",
    "error",
    "success",
    "toast",
    "exception",
    "button",
    "download_button",
    "link_button",
    "form_submit_button",
    "checkbox",
    "toggle",
    "radio",
    "selectbox",
    "multiselect",
    "select_slider",
    "slider",
    "number_input",
    "text_input",
    "text_area",
    "file_uploader",
    "date_input",
    "expander",
    "tabs",
    "spinner",
    "progress",
    "metric",
    "popover",
    "status",
    "Page",
    "segmented_control",
    "pills",
}
TEXT_KEYWORDS = {"label", "help", "placeholder", "text", "body", "title", "caption", "value_label"}
#: Exceptions whose message a person reads (the app shows them; the command line prints them).
USER_ERRORS = {
    "DataError",
    "BudgetExceededError",
    "UnitOfProtectionError",
    "BudgetRaiseError",
    "DPCoreError",
    "UsageError",
    "ArgumentTypeError",
    "PrivacyLeakWarning",
}
WORDS = re.compile(r"[A-Za-z]{2,}")
#: Literals that are deliberately the same in every language.
ALLOWED = {"Language · Ngôn ngữ", "DP Studio"}


def _prose(node: ast.AST) -> bool:
    """Whether ``node`` is text written in English in the code, not through ``_()``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value not in ALLOWED and bool(WORDS.search(node.value))
    if isinstance(node, ast.JoinedStr):
        return any(_prose(v) for v in node.values if isinstance(v, ast.Constant))
    if isinstance(node, ast.BinOp):
        return _prose(node.left) or _prose(node.right)
    if (
        isinstance(node, (ast.List, ast.Tuple))
        and node.elts
        and all(isinstance(e, (ast.Constant, ast.JoinedStr)) for e in node.elts)
    ):
        return any(_prose(e) for e in node.elts)
    if isinstance(node, ast.IfExp):
        return _prose(node.body) or _prose(node.orelse)
    return False


def _name(func: ast.AST) -> str:
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def _column_config(func: ast.AST) -> bool:
    """``st.column_config.TextColumn(...)`` and its kin: a table header a person reads."""
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Attribute) and func.value.attr == "column_config"


def _bypasses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    where = str(path.relative_to(REPO))
    app = where.startswith("dpstudio/")
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and _name(node.exc.func) in USER_ERRORS:
            texts = list(node.exc.args[:1])
        elif isinstance(node, ast.Call) and app and (_name(node.func) in SHOWN or _column_config(node.func)):
            positional = [] if _name(node.func) == "Page" else node.args[:1]  # st.Page's first argument is a file
            texts = [*positional, *(k.value for k in node.keywords if k.arg in TEXT_KEYWORDS)]
        elif isinstance(node, ast.Call) and app and any(k.arg == "title" for k in node.keywords):
            texts = [k.value for k in node.keywords if k.arg == "title"]  # chart titles and axis labels
        elif isinstance(node, ast.Call) and where.startswith("dpcore/cli/") and _name(node.func) in {"say", "print", "warn"}:
            texts = list(node.args[:1])
        elif isinstance(node, ast.Call) and where.startswith("dpcore/cli/") and _name(node.func) == "add_argument":
            texts = [k.value for k in node.keywords if k.arg == "help"]
        else:
            continue
        found += [f"{where}:{node.lineno}" for text in texts if _prose(text)]
    return found


def test_no_user_facing_literal_bypasses_the_catalog():
    files = [p for top in ("dpcore", "dpstudio") for p in sorted((REPO / top).rglob("*.py")) if "__pycache__" not in p.parts]
    found = [hit for path in files for hit in _bypasses(path)]
    assert not found, f"{len(found)} user-facing literals without _(): " + ", ".join(found[:40])


#: The app's English literals that are not sentences for a reader: keys, ledger records, file contents.
NOT_SENTENCES = {
    "Export: randomized copy",
    "Export: synthetic copy",
    "raised on the Privacy page",
    "lowered on the Privacy page",
    "revoked on the Privacy page",  # ledger
    "California housing (sample)",
    "Adult census income (sample)",  # sample keys (shown through _())
    "TPR at 1 % FPR",
    "empirical ε (lower bound)",
    "lower bound on ε",
    "most any audit of this size can show",  # table keys
    "# {}; measured on the owner's raw data\n",  # the CSV's machine-readable header line
    'node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',  # Graphviz
} | ALLOWED


def _sentences_outside_the_catalog(path: Path) -> list[str]:
    """String literals of three words or more that are neither in ``_()``/``N_()`` nor keys, comparisons or docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        inside = []
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body and isinstance(node.body[0], ast.Expr):
            inside = [node.body[0]]
        elif isinstance(node, ast.Call) and _name(node.func) in {"_", "N_", "ngettext"}:
            inside = [node]
        elif isinstance(node, ast.Dict):
            inside = [k for k in node.keys if k is not None]
        elif isinstance(node, (ast.Compare, ast.Subscript)):
            inside = [node]
        skip.update(id(sub) for part in inside for sub in ast.walk(part))
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        else:
            continue
        if len(WORDS.findall(text)) >= 3 and " " in text and text not in NOT_SENTENCES:
            found.append(f"{path.relative_to(REPO)}:{node.lineno}")
    return found


def test_no_english_sentence_is_left_in_the_app():
    """Every sentence the app's code holds goes through the catalog (what the display-call check cannot see: returned text)."""
    files = [p for p in sorted((REPO / "dpstudio").rglob("*.py")) if "__pycache__" not in p.parts]
    found = [hit for path in files for hit in _sentences_outside_the_catalog(path)]
    assert not found, found


def test_the_static_check_catches_a_bare_literal(tmp_path, monkeypatch):
    page = REPO / "dpstudio" / "pages" / "_i18n_probe.py"
    page.write_text(
        'import streamlit as st\nfrom dpcore.i18n import _\nst.error("Plain English")\nst.info(_("Fine"))\n'
        'st.caption(f"{1} rows")\n',
        encoding="utf-8",
    )
    try:
        assert _bypasses(page) == ["dpstudio/pages/_i18n_probe.py:3", "dpstudio/pages/_i18n_probe.py:5"]
    finally:
        page.unlink()


def test_a_sliver_of_budget_left_is_said_without_scientific_notation():
    from dpcore.i18n import short_left

    assert short_left(3.9999e-05) == "< 0.0001" and short_left(0.25) == "0.25" and short_left(0.0) == "0"
