"""Tests of the command line (python -m dpcore): plan, release, estimate, and its exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dpcore.cli import EXIT_BUDGET, EXIT_DATA, EXIT_OK, EXIT_USAGE, main
from dpcore.release import ReleasePlan, default_plan, read_release
from dpcore.tables.loading import read_csv_path
from dpcore.tables.schema import load_schema

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = str(ROOT / "sample_data" / "adult.schema.json")


@pytest.fixture(scope="module")
def adult_part(tmp_path_factory) -> Path:
    """The first 3,000 rows of the Adult sample (written with the python API), for speed."""
    frame, _ = read_csv_path(ROOT / "sample_data" / "adult.csv")
    path = tmp_path_factory.mktemp("data") / "adult_part.csv"
    frame.head(3000).to_csv(path, index=False)
    return path


def _errors(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error")]


def _run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _release_args(source, tmp_path, *extra):
    return [
        "release",
        source,
        "--schema",
        SCHEMA,
        "-o",
        tmp_path / "copy.csv",
        "--report",
        tmp_path / "copy.json",
        "--ledger",
        tmp_path / "ledger.sqlite3",
        *extra,
    ]


def test_plan_writes_the_default_plan(tmp_path, capsys):
    code, out, _ = _run(capsys, "plan", "--schema", SCHEMA, "-o", tmp_path / "plan.json", "--epsilon", "0.5", "--bins", "6")
    assert code == EXIT_OK
    plan = ReleasePlan.from_json((tmp_path / "plan.json").read_text())
    assert plan == default_plan(load_schema(SCHEMA), epsilon=0.5, n_bins=6)
    assert "per-record ε of this plan" in out and "fnlwgt" in out


def test_release_then_estimate_round_trip(adult_part, tmp_path, capsys):
    assert _run(capsys, "plan", "--schema", SCHEMA, "-o", tmp_path / "plan.json")[0] == EXIT_OK
    code, out, err = _run(
        capsys,
        *_release_args(
            adult_part, tmp_path, "--plan", tmp_path / "plan.json", "--markdown", tmp_path / "copy.md", "--epsilon-budget", "40"
        ),
    )
    assert code == EXIT_OK, err
    assert "wrote the randomized copy" in out and "releasing:" in err
    report = json.loads((tmp_path / "copy.json").read_text())
    table = read_release(tmp_path / "copy.csv", report)
    # A new dataset's unit is add/remove, so the copy is padded to a noisy row count.
    assert abs(len(table) - 3000) < 150 and "fnlwgt" not in table.columns
    assert report["unit_of_protection"]["padded"]
    assert "Privacy report" in (tmp_path / "copy.md").read_text()
    code, out, err = _run(
        capsys, "estimate", tmp_path / "copy.csv", "--report", tmp_path / "copy.json", "--joint", "sex", "income"
    )
    assert code == EXIT_OK, err
    assert "Female" in out and "95% interval" in out and "joint shares of sex and income" in out
    code, out, _ = _run(
        capsys, "estimate", tmp_path / "copy.csv", "--report", tmp_path / "copy.json", "--column", "sex", "--json"
    )
    shares = {row["category"]: row["estimate"] for row in json.loads(out)["sex"]}
    assert code == EXIT_OK and shares["Female"] + shares["Male"] == pytest.approx(1.0)
    # Again: the same copy at no cost; --fresh: a new one, charged; then the budget (40) is exhausted.
    first = (tmp_path / "copy.csv").read_bytes()
    code, out, _ = _run(capsys, *_release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "-q"))
    assert code == EXIT_OK and "same copy" in out and (tmp_path / "copy.csv").read_bytes() == first
    code, out, _ = _run(capsys, *_release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "--fresh", "-q"))
    assert code == EXIT_OK and (tmp_path / "copy.csv").read_bytes() != first
    code, _, err = _run(capsys, *_release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "--fresh", "-q"))
    assert code == EXIT_BUDGET and "budget" in err and len(_errors(err)) == 1


def test_a_copy_that_is_mostly_noise_is_refused_unless_accepted(adult_part, tmp_path, capsys):
    """Issue 28 item 4: a release whose own verdict is mostly noise needs an explicit --accept-noise."""
    assert _run(capsys, "plan", "--schema", SCHEMA, "-o", tmp_path / "plan.json", "--epsilon", "0.01")[0] == EXIT_OK
    code, _, err = _run(capsys, *_release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "-q"))
    assert code == EXIT_USAGE and "mostly noise" in err and "--accept-noise" in err and "Nothing was charged" in err
    assert not (tmp_path / "copy.csv").exists()
    code, out, err = _run(capsys, *_release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "-q", "--accept-noise"))
    assert code == EXIT_OK and "wrote the randomized copy" in out, err


def test_seed_warns_and_is_reproducible(adult_part, tmp_path, capsys):
    code, _, err = _run(capsys, *_release_args(adult_part, tmp_path, "--seed", "7", "--chunksize", "1000"))
    assert code == EXIT_OK and "must never be sold" in err and "no --plan given" in err
    report = json.loads((tmp_path / "copy.json").read_text())
    assert report["seeded"] and any("seed" in w for w in report["warnings"])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], EXIT_USAGE),
        (["release"], EXIT_USAGE),
        (["frobnicate"], EXIT_USAGE),
        (["release", "missing.csv", "--schema", SCHEMA, "-o", "out.csv", "--report", "r.json"], EXIT_USAGE),
        (["plan", "--schema", SCHEMA, "-o", "plan.json", "--epsilon", "-1"], EXIT_USAGE),
        (["release", "{data}", "--schema", SCHEMA, "-o", "{data}", "--report", "r.json"], EXIT_USAGE),
        (["release", "{data}", "--schema", "{data}", "-o", "o.csv", "--report", "r.json"], EXIT_DATA),
        (["release", "{data}", "--schema", SCHEMA, "--plan", "{badplan}", "-o", "o.csv", "--report", "r.json"], EXIT_DATA),
        (["release", "{ragged}", "--schema", SCHEMA, "-o", "o.csv", "--report", "r.json"], EXIT_DATA),
        (["estimate", "{data}", "--report", "{data}"], EXIT_DATA),
    ],
)
def test_bad_input_gives_one_line_and_an_exit_code(adult_part, tmp_path, monkeypatch, capsys, argv, expected):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPSTUDIO_LEDGER", str(tmp_path / "ledger.sqlite3"))
    (tmp_path / "bad_plan.json").write_text('{"columns": [{"column": "age", "mechanism": "keep"}]}')
    (tmp_path / "ragged.csv").write_text("age,sex\n39,Male\nSECRET-VALUE-3141,Female,extra\n")
    paths = {"data": str(adult_part), "badplan": "bad_plan.json", "ragged": "ragged.csv"}
    code, out, err = _run(capsys, *[a.format(**paths) for a in argv])
    assert code == expected, err
    assert len(_errors(err)) == 1 and err.strip().splitlines()[-1].startswith("error:")
    assert "Traceback" not in err and "SECRET" not in err + out
    assert not (tmp_path / "o.csv").exists()


def test_help_is_for_newcomers(capsys):
    assert main(["--help"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "examples:" in out and "exit codes" in out and "release" in out
    assert main(["release", "--help"]) == EXIT_OK
    out = capsys.readouterr().out
    assert "example:" in out and "--epsilon-budget" in out and "--seed" in out


def test_subprocess_exit_code_and_message(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dpcore", "release", "nowhere.csv", "--schema", SCHEMA, "-o", "o.csv", "--report", "r.json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"PATH": "", "DPSTUDIO_LEDGER": str(tmp_path / "l.sqlite3")},
        timeout=120,
    )
    assert done.returncode == EXIT_USAGE
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1 and "does not exist" in done.stderr


def test_unexpected_errors_are_one_line(adult_part, tmp_path, monkeypatch, capsys):
    import dpcore.release

    def broken(*args, **kwargs):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(dpcore.release, "release_csv", broken)
    code, _, err = _run(capsys, *_release_args(adult_part, tmp_path))
    assert code == 1 and "RuntimeError" in err and "secret internals" not in err and len(_errors(err)) == 1


# --- datasets: one budget for the same people, however the file was saved ---------------------------


def test_a_column_reversed_renamed_file_spends_the_same_budget(adult_part, tmp_path, capsys):
    """The issue's case: the original and a column-reversed copy each released with a fresh ε = 1 budget."""
    frame, _ = read_csv_path(adult_part)
    reversed_file = tmp_path / "reversed.csv"
    frame[frame.columns[::-1]].sample(frac=1.0, random_state=4).to_csv(reversed_file, index=False, sep=";")
    plan = ReleasePlan.from_dict({"columns": [{"column": "sex", "mechanism": "coin"}]})
    (tmp_path / "plan.json").write_text(plan.to_json())
    code, _, err = _run(capsys, *_release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "--epsilon-budget", "1.5"))
    assert code == EXIT_OK and "A new dataset 'adult_part' was created" in err
    code, _, err = _run(capsys, *_release_args(reversed_file, tmp_path, "--plan", tmp_path / "plan.json", "--fresh"))
    assert code == EXIT_BUDGET and "shares about 100% of its rows with your dataset 'adult_part'" in err
    code, out, _ = _run(capsys, "datasets", "--ledger", tmp_path / "ledger.sqlite3")
    assert out.count("\n") == 1 and "adult_part: (ε = 1.198612289" in out


def test_the_total_is_raised_only_deliberately(adult_part, tmp_path, capsys):
    plan = ReleasePlan.from_dict({"columns": [{"column": "sex", "mechanism": "coin"}]})
    (tmp_path / "plan.json").write_text(plan.to_json())
    args = _release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "--dataset", "census", "-q")
    assert _run(capsys, *args, "--epsilon-budget", "1.5")[0] == EXIT_OK
    code, _, err = _run(capsys, *args, "--fresh", "--epsilon-budget", "5")
    assert code == EXIT_USAGE and "--raise-budget" in err
    code, _, err = _run(capsys, *args, "--fresh")
    assert code == EXIT_BUDGET
    assert _run(capsys, *args, "--fresh", "--raise-budget", "3")[0] == EXIT_OK
    code, out, _ = _run(capsys, "datasets", "--ledger", tmp_path / "ledger.sqlite3", "--history", "census")
    assert code == EXIT_OK and "raised on the command line (--raise-budget)" in out and out.count("spend") == 2


def test_a_separate_dataset_of_the_same_people_is_an_explicit_recorded_act(adult_part, tmp_path, capsys):
    plan = ReleasePlan.from_dict({"columns": [{"column": "sex", "mechanism": "coin"}]})
    (tmp_path / "plan.json").write_text(plan.to_json())
    base = _release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "-q", "--epsilon-budget", "2")
    assert _run(capsys, *base, "--dataset", "first")[0] == EXIT_OK
    code, _, err = _run(capsys, *base, "--dataset", "second")
    assert code == EXIT_DATA and "--separate-dataset --dataset NAME --reason TEXT" in err
    code, _, _ = _run(capsys, *base, "--dataset", "second", "--separate-dataset", "--reason", "a test of the recorded choice")
    assert code == EXIT_OK
    _, out, _ = _run(capsys, "datasets", "--ledger", tmp_path / "ledger.sqlite3", "--history", "second")
    assert "a test of the recorded choice" in out


def test_a_table_of_two_datasets_is_refused_with_the_way_out_which_needs_a_reason(adult_part, tmp_path, capsys):
    plan = ReleasePlan.from_dict({"columns": [{"column": "sex", "mechanism": "coin"}]})
    (tmp_path / "plan.json").write_text(plan.to_json())
    frame, _ = read_csv_path(adult_part)
    for name, rows in (("first", slice(0, 1500)), ("second", slice(1500, 3000))):
        frame.iloc[rows].to_csv(tmp_path / f"{name}.csv", index=False)
        base = _release_args(tmp_path / f"{name}.csv", tmp_path, "--plan", tmp_path / "plan.json", "-q", "--epsilon-budget", "2")
        assert _run(capsys, *base)[0] == EXIT_OK
    both = _release_args(adult_part, tmp_path, "--plan", tmp_path / "plan.json", "-q", "--epsilon-budget", "2")
    code, _, err = _run(capsys, *both)
    assert code == EXIT_DATA and "several datasets" in err and "--separate-dataset --dataset NAME --reason TEXT" in err
    again = _release_args(tmp_path / "first.csv", tmp_path, "--plan", tmp_path / "plan.json")
    code, _, err = _run(capsys, *again)  # attached: the way out is named there too
    assert code == EXIT_OK and "uses that dataset's budget" in err and "--separate-dataset --dataset NAME" in err
    code, _, err = _run(capsys, *both, "--dataset", "both", "--separate-dataset")
    assert code == EXIT_USAGE and "--reason" in err
    assert _run(capsys, *both, "--dataset", "both", "--separate-dataset", "--reason", "kept apart on purpose")[0] == EXIT_OK
    _, out, _ = _run(capsys, "datasets", "--ledger", tmp_path / "ledger.sqlite3", "--history", "both")
    assert "kept apart on purpose" in out and "overlaps the rows of" in out


def test_estimate_prints_consistent_shares_and_says_when_a_column_is_noise(adult_part, tmp_path, capsys):
    from dpcore.release import release_table

    frame, _ = read_csv_path(adult_part)
    plan = ReleasePlan.from_dict(
        {"columns": [{"column": "sex", "mechanism": "k-ary", "epsilon": 0.025}, {"column": "income", "mechanism": "coin"}]}
    )
    result = release_table(frame, load_schema(SCHEMA), plan, random_state=8)
    (tmp_path / "copy.csv").write_bytes(result.csv)
    (tmp_path / "copy.json").write_text(json.dumps(result.report))
    code, out, err = _run(capsys, "estimate", tmp_path / "copy.csv", "--report", tmp_path / "copy.json")
    assert code == EXIT_OK, err
    assert out.count("consistent") >= 3 and "maximum-likelihood" in out
    assert "note: At this ε the copy is mostly noise for 'sex': your error on a share" in out
    assert "mostly noise for 'income'" not in out
    code, out, _ = _run(capsys, "estimate", tmp_path / "copy.csv", "--report", tmp_path / "copy.json", "--json")
    data = json.loads(out)
    assert code == EXIT_OK and set(data) == {"sex", "income"}
    for rows in data.values():
        consistent = [row["consistent"] for row in rows]
        assert all(0 <= c <= 1 for c in consistent) and sum(consistent) == pytest.approx(1.0)


def test_help_lists_every_command_without_loading_the_models():
    """``dpcore --help`` declares only the commands' one-line help: neither scikit-learn (seconds to import) nor pandas
    (half a second) is loaded."""
    import subprocess
    import sys

    from conftest import REPO

    code = (
        "import sys\nfrom dpcore.cli import main\ncode = main(['--help'])\n"
        "print('LOADED' if {'sklearn', 'pandas'} & set(sys.modules) else 'LIGHT', code)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"},
    )
    assert done.stdout.strip().endswith("LIGHT 0"), done.stdout[-500:] + done.stderr[-500:]
    for command in ("plan", "release", "estimate", "synthesize", "train (fit)", "cluster", "answer", "attack", "datasets"):
        assert command in done.stdout
