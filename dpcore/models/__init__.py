"""DP models as scikit-learn estimators; each docstring carries its privacy argument."""

from dpcore.models.additive import DPAdditiveClassifier, DPAdditiveRegressor
from dpcore.models.boosting import DPBoostingClassifier, DPBoostingRegressor
from dpcore.models.choice import DPModelChoiceClassifier, DPModelChoiceRegressor
from dpcore.models.clustering import DPGridDensityClustering
from dpcore.models.dpsgd import DPSGDClassifier, DPSGDRegressor
from dpcore.models.extra_trees import DPExtraTreesClassifier, DPExtraTreesRegressor
from dpcore.models.mean import DPMeanRegressor
from dpcore.models.multiplicative_weights import MultiplicativeWeightsClassifier, MultiplicativeWeightsEnsemble
from dpcore.models.naive_bayes import DPGaussianNB
from dpcore.models.partitioned_forest import DPPartitionedForest
from dpcore.models.random_forest import DPRandomForestClassifier
from dpcore.models.regression_tree import DPRegressionTree
from dpcore.models.student import SubsampleAggregateStudentClassifier, SubsampleAggregateStudentRegressor

__all__ = [
    "DPAdditiveClassifier",
    "DPAdditiveRegressor",
    "DPBoostingClassifier",
    "DPBoostingRegressor",
    "DPExtraTreesClassifier",
    "DPExtraTreesRegressor",
    "DPGaussianNB",
    "DPGridDensityClustering",
    "DPMeanRegressor",
    "DPModelChoiceClassifier",
    "DPModelChoiceRegressor",
    "DPPartitionedForest",
    "DPRandomForestClassifier",
    "DPRegressionTree",
    "DPSGDClassifier",
    "DPSGDRegressor",
    "MultiplicativeWeightsClassifier",
    "MultiplicativeWeightsEnsemble",
    "SubsampleAggregateStudentClassifier",
    "SubsampleAggregateStudentRegressor",
]
