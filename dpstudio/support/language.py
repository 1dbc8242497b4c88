"""The session's language: the sidebar switch, remembered for the session, first guessed from the browser."""

from __future__ import annotations

import streamlit as st

from dpcore.i18n import LANGUAGES, SOURCE_LANGUAGE, get_language, set_language, supported

#: The session's chosen language, kept in plain session state: it outlives page switches, which
#: clear a widget's own state (tests set it to open the app in a language).
CHOSEN_KEY = "dp_studio_language"
#: The switch widget's key.
SWITCH_KEY = "language"
#: Written in both languages, so whoever opens the app can find it.
SWITCH_LABEL = "Language · Ngôn ngữ"


def _browser_language() -> str:
    try:
        return supported(st.context.locale) or SOURCE_LANGUAGE
    except Exception:  # no browser behind this run (AppTest, a bare script run)
        return SOURCE_LANGUAGE


def use_session_language() -> str:
    """Speak the session's language for this run (the browser's on the first run); return its code.

    Called first thing in every run, so everything drawn after it, the engine's sentences
    included, is in that language; the choice lives in this session's state only.
    """
    code = supported(st.session_state.get(CHOSEN_KEY)) or _browser_language()
    st.session_state[CHOSEN_KEY] = code
    return set_language(code)


def keyed(key: str) -> str:
    """A widget key that changes with the language, for a widget whose options are shown translated.

    The browser keeps a radio's or selectbox's choice as the label it showed; after a switch that
    label is no longer among the options, and the widget would show nothing chosen. A key of its
    own per language makes it start again from the ``index`` it is given (English keeps the plain
    key, so scripts and tests can address it).
    """
    code = get_language()
    return key if code == SOURCE_LANGUAGE else f"{key}.{code}"


def _remember_choice() -> None:
    st.session_state[CHOSEN_KEY] = st.session_state[SWITCH_KEY]


def language_switch() -> None:
    """English / Tiếng Việt in the sidebar; a change reruns the page in the new language."""
    codes = list(LANGUAGES)
    st.sidebar.radio(
        SWITCH_LABEL,
        codes,
        index=codes.index(get_language()),
        format_func=LANGUAGES.get,
        key=SWITCH_KEY,
        horizontal=True,
        label_visibility="collapsed",
        on_change=_remember_choice,
    )
