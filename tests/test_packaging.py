"""What an installed DP Studio needs: every package in the wheel, the launchers, and an engine free of the baselines."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _package_folders() -> set[str]:
    found = {
        str(init.parent.relative_to(REPO)).replace("/", ".")
        for top in ("dpcore", "dpstudio")
        for init in (REPO / top).rglob("__init__.py")
    }
    catalogs = {str(po.parent.relative_to(REPO)).replace("/", ".") for po in (REPO / "dpcore" / "locale").rglob("*.po*")}
    return found | catalogs | {"dpstudio.pages", "dpstudio.sample_data"}


def test_every_package_folder_goes_into_the_wheel():
    listed = set(PYPROJECT["tool"]["setuptools"]["packages"])
    assert listed == _package_folders()
    assert PYPROJECT["tool"]["setuptools"]["package-dir"]["dpstudio.sample_data"] == "sample_data"


def test_both_console_scripts_point_at_functions_that_exist():
    import importlib

    for name, target in PYPROJECT["project"]["scripts"].items():
        module, function = target.split(":")
        assert callable(getattr(importlib.import_module(module), function)), name


def test_the_engine_imports_without_the_baselines_or_streamlit():
    code = (
        "import sys\n"
        "for blocked in ('diffprivlib', 'interpret', 'streamlit', 'altair'):\n"
        "    sys.modules[blocked] = None\n"
        "import dpcore, dpcore.cli, dpcore.training, dpcore.model_card, dpcore.release, dpcore.evaluate\n"
        "from dpcore.models.registry import models_for\n"
        "assert models_for('classification', kinds=('ours',))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


def test_dpstudio_help_needs_no_streamlit_and_the_settings_become_flags(capsys):
    from dpstudio.__main__ import main, streamlit_options

    assert main(["--help"]) == 0
    assert "Opens DP Studio" in capsys.readouterr().out
    flags = streamlit_options()
    assert "--client.showErrorDetails=none" in flags and "--server.enableXsrfProtection=true" in flags
    assert "--browser.gatherUsageStats=false" in flags


def test_dpcore_train_help_runs_as_a_console_command():
    done = subprocess.run(
        [sys.executable, "-m", "dpcore", "train", "--help"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and "--epsilon" in done.stdout


def test_the_translation_catalogs_go_into_the_wheel():
    """Every catalog under dpcore/locale matches the package data, so a wheel speaks the languages a checkout does."""
    from fnmatch import fnmatch

    package_data = PYPROJECT["tool"]["setuptools"]["package-data"]
    catalogs = list((REPO / "dpcore" / "locale").rglob("*.po*"))
    assert catalogs
    for catalog in catalogs:
        package = str(catalog.parent.relative_to(REPO)).replace("/", ".")
        assert any(fnmatch(catalog.name, pattern) for pattern in package_data.get(package, [])), catalog


def test_a_catalog_loads_from_outside_the_checkout(tmp_path):
    """The catalogs are found beside the installed module and compiled on first use (no build step)."""
    code = "from dpcore.i18n import _, language\nwith language('vi'):\n    print(_('Privacy budget'))\n"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0 and done.stdout.strip() == "Ngân sách quyền riêng tư", done.stderr[-2000:]
