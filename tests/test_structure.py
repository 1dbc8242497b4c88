"""The engine's shape: layers that import only downwards, private modules kept home, modules small enough to read, no circles."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

DPCORE = Path(__file__).resolve().parents[1] / "dpcore"
#: A module is cut by concept, not by a count (scikit-learn's tree/_classes.py is long because it is one
#: concept); past this many lines, as ruff format lays them out, a module is worth a second look.
MAX_LINES = 800
#: The engine's layers, lowest first (../shared/style.md's layout): a module imports from its own layer and the
#: layers below, never above. A package sits in one layer; a top-level module is named on its own.
LAYERS = (
    (
        "foundations",
        {
            "dpcore",
            "dpcore.exceptions",
            "dpcore.i18n",
            "dpcore.validation",
            "dpcore.published",
            "dpcore.data_home",
            "dpcore.progress",
        },
    ),
    ("mechanisms", {"dpcore.mechanisms", "dpcore.explain"}),
    ("budget and identity", {"dpcore.budget"}),
    ("table input", {"dpcore.tables"}),
    ("backends", {"dpcore.backends"}),
    ("models", {"dpcore.models"}),
    ("copies", {"dpcore.release", "dpcore.synthetic"}),
    (
        "charged workflows",
        {
            "dpcore.training",
            "dpcore.training_rows",
            "dpcore.clustering",
            "dpcore.evaluate",
            "dpcore.model_files",
            "dpcore.model_card",
            "dpcore.recipes",
        },
    ),
    ("attacks", {"dpcore.attacks"}),
    ("command line", {"dpcore.cli", "dpcore.__main__"}),
)


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


def _layer(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``: its own name's, else its package's (``dpcore.budget.persons`` → budget)."""
    for candidate in (module, ".".join(module.split(".")[:2])):
        for index, (_, members) in enumerate(LAYERS):
            if candidate in members:
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS in tests/test_structure.py")


def test_layers_import_only_downwards():
    modules = _modules()
    upward = [
        f"{name} ({LAYERS[_layer(name)][0]}) imports {target} ({LAYERS[_layer(target)][0]})"
        for name, path in modules.items()
        for target in sorted(_imports(name, path, set(modules)))
        if _layer(target) > _layer(name)
    ]
    assert not upward, "imports that run up a layer: " + "; ".join(upward)


def _owner(module: str) -> str | None:
    """The package a private module belongs to: the one above its first ``_name`` part (None: a public module)."""
    parts = module.split(".")
    for depth, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:depth])
    return None


def test_private_modules_are_used_only_inside_their_package():
    modules = _modules()
    outside = [
        f"{name} imports {target}"
        for name, path in modules.items()
        for target in sorted(_imports(name, path, set(modules)))
        if (owner := _owner(target)) is not None and name != owner and not name.startswith(owner + ".")
    ]
    assert not outside, "private modules used outside their package: " + "; ".join(outside)


def test_reading_a_schema_opens_no_ledger():
    """Declaring columns is table input: it must not import the ledger (and SQLite) underneath it."""
    code = "import sys, dpcore.tables.schema; print('sqlite3' in sys.modules, 'dpcore.budget.accountant' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=DPCORE.parent)
    assert result.stdout.split() == ["False", "False"]


def test_the_first_page_loads_no_model_library():
    """The Data page opens every session: scikit-learn and scipy.optimize (~2 s) wait for the pages that train.

    Every module the app's entry script and the Data page import is imported, as the first page would.
    """
    modules = sorted(
        _imported_modules(DPCORE.parent / "dpstudio" / "app.py")
        | _imported_modules(DPCORE.parent / "dpstudio" / "pages" / "data.py")
    )
    code = f"import sys, importlib; [importlib.import_module(m) for m in {modules!r}]; print('sklearn' in sys.modules, 'scipy.optimize' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=DPCORE.parent)
    assert result.stdout.split() == ["False", "False"], modules


def _imported_modules(script: Path) -> set[str]:
    """The project's modules a script imports at its top level."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    names = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ("dpcore", "dpstudio"):
            names.add(node.module)
            names.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if (DPCORE.parent / node.module.replace(".", "/") / f"{alias.name}.py").exists()
            )
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names if alias.name.split(".")[0] in ("dpcore", "dpstudio"))
    return names
