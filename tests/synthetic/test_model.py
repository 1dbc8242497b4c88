"""Private-PGM's set-up: where JAX keeps the compiled programs between processes."""

from __future__ import annotations

from dpcore.synthetic.model import COMPILE_CACHE_ENV, compile_cache_directory


def test_the_compile_cache_lives_in_the_user_cache_unless_moved_or_turned_off(monkeypatch, tmp_path):
    monkeypatch.delenv(COMPILE_CACHE_ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert compile_cache_directory() == str(tmp_path / "dpstudio" / "jax")
    monkeypatch.setenv(COMPILE_CACHE_ENV, str(tmp_path / "elsewhere"))
    assert compile_cache_directory() == str(tmp_path / "elsewhere")
    monkeypatch.setenv(COMPILE_CACHE_ENV, "off")
    assert compile_cache_directory() is None
