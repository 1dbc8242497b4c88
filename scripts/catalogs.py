"""Keep the translation catalogs in step with the code (GNU gettext via Babel).

    python scripts/catalogs.py            # extract every _()/N_()/ngettext() into dpcore/locale/dpstudio.pot
                                          # and merge it into each language's .po (new sentences arrive empty)
    python scripts/catalogs.py --init xx  # start the catalog of a new language xx
    python scripts/catalogs.py --check    # exit 1 when a catalog lacks a translation (what tests/test_i18n.py checks)

The catalogs are compiled when the app or the command line first uses a language, so there is
no compile step; ``pybabel compile -d dpcore/locale -D dpstudio`` works too for tools that want .mo files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.pofile import read_po, write_po

REPO = Path(__file__).resolve().parents[1]
LOCALE = REPO / "dpcore" / "locale"
TEMPLATE = LOCALE / "dpstudio.pot"
METHODS = [("**.py", "python")]
KEYWORDS = {"_": None, "N_": None, "ngettext": (1, 2)}


def extract() -> Catalog:
    """Every translatable sentence of dpcore/ and dpstudio/, with where it is written."""
    template = Catalog(project="DP Studio", version="0.1", msgid_bugs_address="", charset="utf-8")
    for package in ("dpcore", "dpstudio"):
        for filename, lineno, message, comments, context in extract_from_dir(
            REPO / package, METHODS, keywords=KEYWORDS, comment_tags=("Translators:",), strip_comment_tags=True
        ):
            template.add(message, None, [(f"{package}/{filename}", lineno)], auto_comments=comments, context=context)
    return template


def languages() -> list[str]:
    return sorted(p.parent.parent.name for p in LOCALE.glob("*/LC_MESSAGES/dpstudio.po"))


def read(path: Path, locale: str | None = None) -> Catalog:
    with path.open("rb") as source:
        return read_po(source, locale=locale)


def write(path: Path, catalog: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as out:
        write_po(out, catalog, width=120, sort_output=False, ignore_obsolete=True, include_previous=False)


def missing(catalog: Catalog, template: Catalog) -> list[str]:
    """The sentences of ``template`` that ``catalog`` does not translate (absent, empty or fuzzy)."""
    out = []
    for message in template:
        if not message.id:
            continue
        found = catalog.get(message.id, context=message.context)
        text = found.string if found is not None else None
        if found is None or found.fuzzy or not text or (isinstance(text, tuple) and not all(text)):
            out.append(message.id if isinstance(message.id, str) else message.id[0])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--init", metavar="LANG", help="start the catalog of a new language (a code such as 'fr')")
    parser.add_argument("--check", action="store_true", help="only report the sentences a catalog lacks")
    args = parser.parse_args(argv)
    template = extract()
    if args.check:
        gaps = {code: missing(read(LOCALE / code / "LC_MESSAGES" / "dpstudio.po", code), template) for code in languages()}
        for code, ids in gaps.items():
            print(f"{code}: {len(ids)} of {len(template)} sentences lack a translation")
            for message in ids[:20]:
                print("   ", message[:100])
        return 1 if any(gaps.values()) else 0
    write(TEMPLATE, template)
    if args.init:
        catalog = Catalog(locale=args.init, domain="dpstudio", project="DP Studio", charset="utf-8")
        catalog.update(template)
        write(LOCALE / args.init / "LC_MESSAGES" / "dpstudio.po", catalog)
    for code in languages():
        path = LOCALE / code / "LC_MESSAGES" / "dpstudio.po"
        catalog = read(path, code)
        catalog.update(template, no_fuzzy_matching=True)
        write(path, catalog)
        print(f"{code}: {len(template) - len(missing(catalog, template))} of {len(template)} sentences translated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
