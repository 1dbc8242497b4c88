"""The app's loaded code is frozen out of the garbage collector's full collections, once per new import."""

from __future__ import annotations

import gc
import sys

from dpstudio.support import heap


def test_loaded_code_is_frozen_after_new_imports_only(monkeypatch):
    monkeypatch.setattr(heap, "_frozen_with", [0])
    collections: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *generation: collections.append(1) or 0)
    frozen: list[int] = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(len(sys.modules)))
    heap.freeze_loaded_code()
    assert frozen == [len(sys.modules)] and collections == [1]  # collected first, so no garbage is frozen
    heap.freeze_loaded_code()
    assert len(frozen) == 1  # nothing new was imported
    monkeypatch.setitem(sys.modules, "a_module_imported_since", object())
    heap.freeze_loaded_code()
    assert len(frozen) == 2
