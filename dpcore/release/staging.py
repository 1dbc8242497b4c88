"""Where a copy is written before it is charged: beside its destination, owner-only, locked while in use.

A release writes its copy into a staging file (``0o600``) or folder (``0o700``) beside the
destination and renames it into place only once the copy is charged. Until then the staging
entry holds a complete copy nobody has paid for, so the release holds an exclusive lock on it
(``flock``) while it runs, and every release first removes the staging entries of its
destination that no running release holds: those a killed process left behind. A release
running at the same time keeps its lock, and its entry.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - no advisory locks (Windows): nothing can be told stale, so nothing is removed
    fcntl = None  # type: ignore[assignment]

SUFFIX = ".partial"
_ATTEMPTS = 5


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _lock(path: Path) -> int | None:
    """A descriptor holding ``path``'s exclusive lock, or None when another process holds it or it is gone."""
    try:
        handle = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(handle)
        return None
    return handle


def remove_stale(parent: Path, prefix: str) -> None:
    """Remove the staging entries ``<prefix><8 random characters>.partial`` in ``parent`` that no running release holds."""
    if fcntl is None:
        return
    pattern = re.compile(re.escape(prefix) + r"[a-z0-9_]{8}" + re.escape(SUFFIX))
    try:
        names = [entry.name for entry in os.scandir(parent) if pattern.fullmatch(entry.name)]
    except OSError:
        return
    for name in names:
        handle = _lock(parent / name)
        if handle is not None:
            try:
                _remove(parent / name)
            finally:
                os.close(handle)


def new_entry(parent: Path, prefix: str, *, folder: bool) -> tuple[Path, int | None]:
    """A new staging folder or (empty) file ``<prefix><8 random characters>.partial`` in ``parent``, and the descriptor holding its
    lock (None where there are no locks): close it with :func:`unlock` once the entry is renamed or removed.

    Stale entries of the same prefix (a killed release's, never charged for) are removed first.
    """
    remove_stale(parent, prefix)
    for _attempt in range(_ATTEMPTS):
        # mkdtemp and mkstemp make the entry readable by its owner only (0o700, 0o600).
        if folder:
            path = Path(tempfile.mkdtemp(prefix=prefix, suffix=SUFFIX, dir=parent))
        else:
            handle, name = tempfile.mkstemp(prefix=prefix, suffix=SUFFIX, dir=parent)
            os.close(handle)
            path = Path(name)
        if fcntl is None:
            return path, None
        lock = _lock(path)
        # Another release's clean-up may have removed the new entry before it was locked: make another.
        if lock is not None and path.exists() and os.path.samestat(os.fstat(lock), os.stat(path)):
            return path, lock
        if lock is not None:
            os.close(lock)
        _remove(path)
    raise RuntimeError("could not lock a new staging entry")


def unlock(lock: int | None) -> None:
    if lock is not None:
        os.close(lock)


@contextmanager
def staging(parent: Path, prefix: str, *, folder: bool) -> Iterator[Path]:
    """A new staging entry (:func:`new_entry`), locked until the block ends.

    Whatever is left at the path when the block ends (an error, or a copy not renamed into
    place) is removed.
    """
    path, lock = new_entry(parent, prefix, folder=folder)
    try:
        yield path
    finally:
        try:
            _remove(path)
        finally:
            unlock(lock)
