"""Python's full garbage collections kept cheap in the app's long-running server.

Streamlit collects every generation after each run of the script (``runner.postScriptGC``), so that
a session's garbage never piles up. With the app's libraries loaded (pandas, scikit-learn, Altair,
Private-PGM and JAX) the collector walked about 280,000 of their objects each time: 180 ms of CPU
after every click on a 2-core machine, about a fifth of the server's work in the browser tests.
Those objects live as long as the process. :func:`freeze_loaded_code` hides them from the collector
(``gc.freeze``) after a run that imported more of them, so a collection walks the sessions' objects
only and takes under a millisecond.

What else is alive at that moment is frozen with them: a session's tables, which refcounting still
frees, but not if they ever end up in a reference cycle. It happens a few times in a process (when
a page first imports its libraries), after a full collection.
"""

from __future__ import annotations

import gc
import sys

#: How many modules were loaded at the last freeze.
_frozen_with = [0]


def freeze_loaded_code() -> None:
    """Collect, then freeze everything alive, when modules were imported since the last call."""
    if len(sys.modules) <= _frozen_with[0]:
        return
    gc.collect()
    gc.freeze()
    _frozen_with[0] = len(sys.modules)
