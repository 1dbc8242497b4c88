"""The session's language: the sidebar switch, remembered for the session, first guessed from the browser."""

from __future__ import annotations

import streamlit as st

from dpcore.i18n import LANGUAGES, SOURCE_LANGUAGE, set_language, supported

#: The session-state key of the language switch (tests set it to open the app in a language).
LANGUAGE_KEY = "language"
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
    if supported(st.session_state.get(LANGUAGE_KEY)) is None:
        st.session_state[LANGUAGE_KEY] = _browser_language()
    return set_language(st.session_state[LANGUAGE_KEY])


def language_switch() -> None:
    """English / Tiếng Việt in the sidebar; a change reruns the page in the new language."""
    st.sidebar.radio(SWITCH_LABEL, list(LANGUAGES), format_func=LANGUAGES.get, key=LANGUAGE_KEY, horizontal=True,
                     label_visibility="collapsed")
