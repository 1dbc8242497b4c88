"""Keeping freed memory in the process while a large file is released.

Every chunk of a streamed release allocates and frees the same few megabytes of arrays. With
glibc's defaults a freed block of that size goes back to the operating system at once (an
``munmap``, or a trim of the heap's top), and the next chunk's arrays fault every page in again:
on this project's 2-core benchmark machine that kernel time was a fifth of the release's CPU
time. :func:`steady_heap` raises glibc's mmap and trim thresholds for the duration of a
release, so those blocks are reused, then puts the documented defaults back and returns the
free memory. The thresholds only change where freed memory waits; they cannot raise the peak
beyond what the release holds at once plus the trim threshold. On systems without glibc
(macOS, Windows, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Blocks up to this size come from the heap during a release (a chunk's arrays are a few MB).
MMAP_THRESHOLD = 64 << 20
#: Free memory the heap may keep at its top during a release.
TRIM_THRESHOLD = 128 << 20
#: glibc's documented defaults, put back afterwards.
_DEFAULT_THRESHOLD = 128 << 10

_lock = threading.Lock()
_active = 0


def _glibc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        libc.gnu_get_libc_version  # noqa: B018 (only glibc has it)
        libc.mallopt, libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


def _set(trim: int, mmap: int) -> None:
    assert _LIBC is not None
    _LIBC.mallopt(_M_TRIM_THRESHOLD, trim)
    _LIBC.mallopt(_M_MMAP_THRESHOLD, mmap)


@contextmanager
def steady_heap() -> Iterator[None]:
    """Raise glibc's mmap and trim thresholds while the block runs (nested and concurrent uses counted)."""
    global _active
    if _LIBC is None:
        yield
        return
    with _lock:
        if _active == 0:
            _set(TRIM_THRESHOLD, MMAP_THRESHOLD)
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _set(_DEFAULT_THRESHOLD, _DEFAULT_THRESHOLD)
                _LIBC.malloc_trim(0)
