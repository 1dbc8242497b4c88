"""The release's allocator setting is scoped: nested and concurrent releases restore it once, at the end."""

from __future__ import annotations

from dpcore.release import heap


def test_steady_heap_restores_the_defaults_after_the_last_release(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_set", lambda trim, mmap: calls.append((trim, mmap)))
    if heap._LIBC is None:  # not glibc: nothing to set
        with heap.steady_heap():
            pass
        assert calls == []
        return
    with heap.steady_heap():
        with heap.steady_heap():
            assert calls == [(heap.TRIM_THRESHOLD, heap.MMAP_THRESHOLD)]
        assert len(calls) == 1
    assert calls[-1] == (128 << 10, 128 << 10) and heap._active == 0
