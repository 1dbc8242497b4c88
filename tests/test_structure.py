"""The engine's shape: every module small enough to read in one sitting, and no import circles."""

from __future__ import annotations

import ast
from pathlib import Path

DPCORE = Path(__file__).resolve().parents[1] / "dpcore"
#: A module is cut by concept, not by a count (scikit-learn's tree/_classes.py is long because it is one
#: concept); past this many lines, as ruff format lays them out, a module is worth a second look.
MAX_LINES = 800


def _module_name(path: Path) -> str:
    parts = path.relative_to(DPCORE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(DPCORE.rglob("*.py")) if "__pycache__" not in path.parts}


def _imports(name: str, path: Path, known: set[str]) -> set[str]:
    """The dpcore modules that module ``name`` (at ``path``) imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from package import module`` needs only the module; ``from module import name`` needs the module.
            found.update(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names)
    return {module for module in found if module in known and module != name}


def test_no_module_is_longer_than_800_lines():
    long = {name: n for name, path in _modules().items() if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_no_import_circles():
    modules = _modules()
    graph = {name: _imports(name, path, set(modules)) for name, path in modules.items()}
    cycles, done = [], set()

    def visit(trail: list[str]) -> None:
        for nxt in sorted(graph[trail[-1]]):
            if nxt in trail:
                cycles.append(" -> ".join(trail[trail.index(nxt) :] + [nxt]))
            elif nxt not in done:
                visit(trail + [nxt])
        done.add(trail[-1])

    for name in sorted(graph):
        if name not in done:
            visit([name])
    assert not cycles, "import circles: " + "; ".join(cycles)
