"""The owner's local workspace: the working table, its declarations and the last model, kept on disk.

A browser session keeps its work in memory, so a reload would lose an upload, every declared
bound and a model whose ε was already charged. Each session therefore has a workspace folder
beside the ledger, named by an unguessable token that the page carries in its URL
(``?workspace=…``): a reload, or the same URL in another tab, reopens the same work, while any
other session — which does not know the token — never sees it. With sign-in, a workspace is also
its signer's alone: the token is in every address bar, history and shared link, so a colleague
who is given it (or finds it) must not open another's raw table with it.

What is kept: the table (Parquet; for a bundled sample only its name), the schema the owner
declared, which dataset it belongs to, the last trained model, group map and attacks. It is the owner's own
data on the owner's own disk, like the ledger; nothing here is ever released.

**Shared tables.** When an owner grants an analyst a slice of a dataset, the owner's table and
declarations are also kept under ``shared/<dataset id>`` beside the workspaces (:func:`share`), so
an analyst's session, on the owner's server, can train and make copies from the table
(:func:`load_shared`) without any page of theirs ever showing it. An analyst's own workspace holds
only their results.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import secrets
from dataclasses import dataclass, fields, is_dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from dpcore.budget.accountant import BudgetLedger, default_ledger
from dpcore.budget.datasets import Catalog, Identification
from dpcore.budget.slices import creator
from dpcore.data_home import beside_ledger
from dpcore.exceptions import DataError
from dpcore.tables.schema import Schema
from dpstudio.support.state import Dataset, load_sample

if TYPE_CHECKING:  # the release engine loads with the pages that release, not the first
    from dpcore.release.summary import DPSummary

QUERY_KEY = "workspace"
#: A workspace untouched this long is deleted when a new session starts: it holds a copy of the
#: owner's raw table, which should not outlive its use by much.
KEEP_DAYS = 30
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{20,64}$")


def new_token() -> str:
    return secrets.token_urlsafe(24)


def folder(ledger_path, token: str) -> Path | None:
    """The workspace folder of ``token`` (None for a token that is not one of ours)."""
    if not isinstance(token, str) or not _TOKEN.match(token):
        return None
    return beside_ledger(ledger_path or default_ledger()).parent / "workspaces" / token


def prune(ledger_path, keep_days: float = KEEP_DAYS) -> int:
    """Delete workspaces not written for ``keep_days`` days; return how many went."""
    import shutil
    import time

    base = beside_ledger(ledger_path or default_ledger()).parent / "workspaces"
    if not base.is_dir():
        return 0
    cutoff, removed = time.time() - keep_days * 86400, 0
    for where in base.iterdir():
        if where.is_dir() and _TOKEN.match(where.name) and where.stat().st_mtime < cutoff:
            shutil.rmtree(where, ignore_errors=True)
            removed += 1
    return removed


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` whole or not at all (two sessions may write the same file: each through a partial of its own)."""
    partial = path.with_name(f"{path.name}.{secrets.token_hex(6)}.partial")
    try:
        partial.write_bytes(data)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def save(ledger_path, token: str, dataset: Dataset, table_changed: bool = False, *, owner: str = "") -> None:
    """Keep the dataset's declarations (and, when ``table_changed``, the table itself), as ``owner``'s.

    ``owner`` is the signed-in subject (empty without sign-in); only they reopen it (:func:`load`).
    """
    where = folder(ledger_path, token)
    if where is None:
        return
    where.mkdir(parents=True, exist_ok=True)
    where.touch()  # the folder's time is the workspace's last use (see prune)
    found = dataset.identification
    identified = {
        "created": found.created,
        "overlap": found.overlap,
        "matched": found.matched.dataset_id if found.matched else None,
        "legacy": found.legacy,
    }
    _write_dataset(where, dataset, table_changed, owner, identified)


def _write_dataset(where: Path, dataset: Dataset, table_changed: bool, owner: str, identified: dict) -> None:
    """The table (unless a sample, or unchanged and already there) and ``workspace.json`` of ``dataset`` in ``where``."""
    if not dataset.is_sample and (table_changed or not (where / "table.parquet").exists()):
        _write(where / "table.parquet", _parquet(dataset.frame))
    meta = {
        "name": dataset.name,
        "info": dataset.info,
        "is_sample": dataset.is_sample,
        "schema": dataset.schema.to_dict(),
        "dataset_id": dataset.identification.dataset.dataset_id,
        **identified,
        "owner": owner,
    }
    _write(where / "workspace.json", json.dumps(meta, ensure_ascii=False).encode("utf-8"))


def _is_dataset_id(dataset_id: object) -> bool:
    """Whether ``dataset_id`` can be one of the ledger's ids (and so a file name beside it, never a path elsewhere)."""
    return isinstance(dataset_id, str) and re.fullmatch(r"[A-Za-z0-9_-]{1,64}", dataset_id) is not None


def _declarations_file(ledger_path, dataset_id: str, owner: str) -> Path | None:
    """One file per dataset and person (a table of the same people opened by another person never overwrites it)."""
    if not _is_dataset_id(dataset_id):
        return None
    person = hashlib.sha256(owner.encode("utf-8")).hexdigest()[:16]
    return beside_ledger(ledger_path or default_ledger()).parent / "declarations" / f"{dataset_id}-{person}.json"


def remember_declarations(ledger_path, dataset: Dataset, *, owner: str = "") -> None:
    """Keep ``owner``'s latest declarations of the dataset beside the ledger, for the next table of the same people.

    Bounds and categories estimated with ε are a release the owner paid for: opening the same file
    again (in any workspace) must not ask for them again (:func:`earlier_declarations`). A domain
    read from the data is not kept (it is never carried, and raw values should not outlive the
    workspaces, which are pruned). A bundled sample's declarations come with it. Best effort: a
    declaration not kept is only asked again.
    """
    where = _declarations_file(ledger_path, dataset.dataset_id, owner)
    if where is None or dataset.is_sample:
        return
    kept = Schema.from_dict(dataset.schema.to_dict())
    for column in kept.columns:
        if column.bounds_from_data:
            column.lower = column.upper = None
            column.categories = []
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        _write(where, json.dumps({"owner": owner, "schema": kept.to_dict()}, ensure_ascii=False).encode("utf-8"))
    except OSError:
        return


def earlier_declarations(ledger_path, dataset_id: str, *, owner: str = "") -> Schema | None:
    """The declarations ``owner`` last made for ``dataset_id`` (None: none kept, or another person's)."""
    where = _declarations_file(ledger_path, dataset_id, owner)
    try:
        kept = json.loads(where.read_bytes()) if where is not None else None
        return Schema.from_dict(kept["schema"]) if kept and kept.get("owner", "") == owner else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, DataError):
        return None  # a file cut short or from an older version: the new reading stands


def shared_folder(ledger_path, dataset_id: str) -> Path | None:
    """Where the table an owner shares with the analysts of ``dataset_id`` is kept (None for an id that is not one of ours)."""
    if not _is_dataset_id(dataset_id):
        return None
    return beside_ledger(ledger_path or default_ledger()).parent / "shared" / dataset_id


def owns(ledger_path, dataset_id: str, owner: str) -> bool:
    """Whether the ledger names ``owner`` (a subject, empty without sign-in) the creator of ``dataset_id``.

    A dataset created without sign-in is everyone's (:func:`dpcore.budget.slices.role`).
    """
    with BudgetLedger(dataset_id, path=ledger_path).connection() as conn:
        made_by = creator(conn, dataset_id)
    return made_by is not None and made_by in ("", owner)


def share(ledger_path, dataset: Dataset, *, owner: str = "", table_changed: bool = True) -> bool:
    """Keep ``dataset``'s table and declarations where its analysts' sessions find them (the engine's side only).

    Only the dataset's owner shares it: for anyone else nothing is written and the answer is False,
    so nobody but the owner changes what the analysts work from.
    """
    where = shared_folder(ledger_path, dataset.dataset_id)
    if where is None or not owns(ledger_path, dataset.dataset_id, owner):
        return False
    where.mkdir(parents=True, exist_ok=True)
    _write_dataset(where, dataset, table_changed, owner, {"created": False, "overlap": 1.0, "matched": None})
    return True


def unshare(ledger_path, dataset_id: str) -> None:
    """Delete the owner's table and declarations kept for ``dataset_id``'s analysts (once no slice of it is live).

    The owner's raw table should not outlive its use; the DP summary stays (it is a release).
    """
    where = shared_folder(ledger_path, dataset_id)
    if where is not None:
        for name in ("table.parquet", "workspace.json"):
            (where / name).unlink(missing_ok=True)


def save_summary(ledger_path, dataset_id: str, summary: DPSummary) -> None:
    """Keep the DP summary the owner released for ``dataset_id``'s analysts beside the shared table."""
    where = shared_folder(ledger_path, dataset_id)
    if where is not None:
        where.mkdir(parents=True, exist_ok=True)
        _write(where / "summary.json", json.dumps(summary.to_dict(), ensure_ascii=False).encode("utf-8"))


def load_summary(ledger_path, dataset_id: str) -> DPSummary | None:
    from dpcore.release.summary import DPSummary

    where = shared_folder(ledger_path, dataset_id)
    try:
        data = json.loads((where / "summary.json").read_text(encoding="utf-8")) if where is not None else None
        return DPSummary.from_dict(data) if data else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def is_shared(ledger_path, dataset_id: str) -> bool:
    where = shared_folder(ledger_path, dataset_id)
    return where is not None and (where / "workspace.json").exists()


def load_shared(ledger_path, dataset_id: str, catalog: Catalog) -> Dataset | None:
    """The table and declarations the owner shared for ``dataset_id``'s analysts, or None when there are none.

    None too when the files name someone other than the dataset's owner as who shared them.
    """
    where = shared_folder(ledger_path, dataset_id)
    if where is None or not (where / "workspace.json").exists():
        return None
    try:
        meta = json.loads((where / "workspace.json").read_text(encoding="utf-8"))
        if meta.get("dataset_id") != dataset_id or not owns(ledger_path, dataset_id, str(meta.get("owner", ""))):
            return None
        return _dataset(where, meta, catalog)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _parquet(frame: pd.DataFrame) -> bytes:
    import io

    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def load(ledger_path, token: str, catalog: Catalog, *, owner: str = "") -> Dataset | None:
    """The dataset kept under ``token`` for ``owner``, or None when there is none, it is another's, or it cannot be read."""
    where = folder(ledger_path, token)
    if where is None or not (where / "workspace.json").exists():
        return None
    try:
        meta = json.loads((where / "workspace.json").read_text(encoding="utf-8"))
        if meta.get("owner", "") != owner:
            return None  # not a damaged workspace, someone else's: the session starts afresh all the same
        return _dataset(where, meta, catalog)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged workspace is not worth a traceback: the session starts afresh


def _dataset(where: Path, meta: dict, catalog: Catalog) -> Dataset | None:
    """The dataset a workspace's (or a shared table's) ``meta`` describes, its table read from ``where``."""
    known = catalog.find(meta["dataset_id"])
    if known is None:
        return None
    if meta["is_sample"]:
        dataset = load_sample(meta["name"], catalog)
    else:
        frame = pd.read_parquet(where / "table.parquet")
        matched = catalog.find(meta["matched"]) if meta.get("matched") else None
        found = Identification(known, meta["created"], meta["overlap"], matched, meta.get("legacy", False))
        dataset = Dataset(meta["name"], frame, meta["info"], Schema([]), Schema([]), found)
    dataset.schema = dataset.base_schema = Schema.from_dict(meta["schema"])
    return dataset


@dataclass(frozen=True)
class Kept:
    """A workspace as a list of earlier work names it: its token, its table's name and when it was last used."""

    token: str
    table: str
    used: float


def kept(ledger_path, tokens: list[str], *, owner: str = "") -> list[Kept]:
    """The workspaces of ``tokens`` that still exist and are ``owner``'s, most recently used first."""
    found = []
    for token in dict.fromkeys(tokens):
        where = folder(ledger_path, token)
        try:
            meta = json.loads((where / "workspace.json").read_text(encoding="utf-8")) if where is not None else None
            if meta is not None and meta.get("owner", "") == owner:
                found.append(Kept(token, str(meta["name"]), where.stat().st_mtime))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # gone or damaged: nothing to reopen
    return sorted(found, key=lambda k: k.used, reverse=True)


def save_result(ledger_path, token: str, name: str, result: object | None) -> None:
    """Keep a result (a trained model, a group map, attacks), so a reload does not lose what was charged or waited for.

    ``None`` deletes it. The session's side is :func:`dpstudio.support.session.remember_result`.
    """
    where = folder(ledger_path, token)
    if where is None:
        return
    where.mkdir(parents=True, exist_ok=True)
    if result is None:
        (where / f"{name}.pickle").unlink(missing_ok=True)
        return
    _write(where / f"{name}.pickle", pickle.dumps(result))


def load_result(ledger_path, token: str, name: str) -> object | None:
    where = folder(ledger_path, token)
    if where is None or not (where / f"{name}.pickle").exists():
        return None
    try:
        # Our own file in the owner's own workspace folder, written by save_result above.
        result = pickle.loads((where / f"{name}.pickle").read_bytes())  # noqa: S301
    except Exception:  # a result from another version of the code: start without it
        return None
    return result if _complete(result) else None


def _complete(result: object, depth: int = 2) -> bool:
    """False for a result pickled before a field was added to it (or to a result it holds): another version of the code.

    Such a result would miss what is now asked of it (which columns a model was fitted on with a
    domain read from the data, say), so it is dropped like any result of another version.
    """
    if not is_dataclass(result) or isinstance(result, type) or depth < 0:
        return True
    return all(hasattr(result, f.name) and _complete(getattr(result, f.name), depth - 1) for f in fields(result))


def save_released_plans(ledger_path, token: str, plans: dict) -> None:
    """Keep the plans of the copies given out, so after a reload the same copy is handed out again free."""
    where = folder(ledger_path, token)
    if where is None:
        return
    where.mkdir(parents=True, exist_ok=True)
    data = {"|".join(key): plan.to_dict() for key, plan in plans.items()}
    _write(where / "released_plans.json", json.dumps(data, ensure_ascii=False).encode("utf-8"))


def load_released_plans(ledger_path, token: str) -> dict:
    from dpcore.release import ReleasePlan

    where = folder(ledger_path, token)
    if where is None or not (where / "released_plans.json").exists():
        return {}
    try:
        data = json.loads((where / "released_plans.json").read_text(encoding="utf-8"))
        return {tuple(key.split("|")): ReleasePlan.from_dict(plan) for key, plan in data.items()}
    except (OSError, ValueError, TypeError):
        return {}
