"""Every tree model exports its trees through one ``tree_records``, in one record format."""

from __future__ import annotations

import numpy as np
import pytest

from dpcore.models import (
    DPExtraTreesClassifier,
    DPExtraTreesRegressor,
    DPPartitionedForest,
    DPRandomForestClassifier,
    DPRegressionTree,
)

NODE_KEYS = {"id", "depth", "noisy_count"}
SPLIT_KEYS = NODE_KEYS | {"feature", "threshold", "left", "right"}
LEAF_KEYS = NODE_KEYS | {"leaf", "value"}

TREE_MODELS = [
    DPRegressionTree(max_depth=3),
    DPPartitionedForest(n_estimators=2, max_depth=2),
    DPExtraTreesRegressor(n_estimators=2, max_depth=3),
    DPExtraTreesRegressor(n_estimators=2, max_depth=3, sampling="subsample"),
    DPExtraTreesClassifier(n_estimators=2, max_depth=3, classes=["no", "yes"]),
    DPRandomForestClassifier(n_estimators=2, max_depth=3, classes=["no", "yes"], sampling="subsample"),
]


def _fit(model):
    rng = np.random.default_rng(0)
    X = rng.random((3000, 3)) * 10
    classifier = "classes" in model.get_params()
    y = np.where(X[:, 0] > 5, "yes", "no") if classifier else 100 + 10 * X[:, 0]
    params = {"epsilon": 20.0, "bounds": (0, 10), "random_state": 0}
    if not classifier:
        params["target_bounds"] = (100, 200)
    return model.set_params(**params).fit(X, y), classifier


@pytest.mark.parametrize("model", TREE_MODELS, ids=lambda m: f"{type(m).__name__}-{m.get_params().get('sampling', '')}")
def test_tree_records_share_one_format(model):
    model, classifier = _fit(model)
    records = model.tree_records(["a", "b", "c"])
    assert [r["id"] for r in records] == list(range(len(records)))
    ids = {r["id"] for r in records}
    for record in records:
        if record.get("leaf"):
            assert set(record) == LEAF_KEYS
            if classifier:
                assert set(record["value"]) == {"no", "yes"}
            else:
                assert record["value"] is None or 100 <= record["value"] <= 200
        else:
            assert set(record) == SPLIT_KEYS
            assert record["feature"] in {"a", "b", "c"} and 0 < record["threshold"] < 10
            assert {record["left"], record["right"]} <= ids
    assert any(r.get("leaf") for r in records) and any(not r.get("leaf") for r in records)


def test_ensembles_export_each_tree_block_and_default_feature_names():
    model, _ = _fit(DPExtraTreesRegressor(n_estimators=2, max_depth=2, sampling="subsample"))
    first, second = model.tree_records(tree=0), model.tree_records(tree=1)
    assert first != second
    assert {r["feature"] for r in first if not r.get("leaf")} <= {"x0", "x1", "x2"}
    with pytest.raises(IndexError):
        model.tree_records(tree=2)
