"""Statistics for metacog-book: tetrachoric factor structure, pairwise calibration, calibration
metrics, meta-d', policy-aware metrics, the self-versus-other test and bootstrap intervals.

Binary rating tables are items x models DataFrames of 0/1/NaN throughout.
"""

from .axis import AxisResult, axis_alignment, axis_positions, item_scores
from .bootstrap import bootstrap_ci
from .bvn import bvn_cdf
from .calibration import (BrierResult, ECEResult, aurc, auroc, brier, ece, excess_aurc,
                          risk_coverage, type2_auroc)
from .factor import FactorResult, factor_analysis, oblimin, varimax
from .metad import MetaDResult, confidence_to_ratings, metad, metad_trials, trials_to_counts
from .parallel import ParallelResult, parallel_analysis
from .pairwise import PairwiseResult, bh_fdr, pairwise_calibration, unanimous_items
from .policy import flag_counts, h_proxy, policy_gains, policy_table
from .selfother import SelfOtherTest, self_other_test
from .tetrachoric import TetrachoricResult, cor_smooth, tetrachoric, thresholds

__all__ = [
    "AxisResult", "BrierResult", "ECEResult", "FactorResult", "MetaDResult", "PairwiseResult",
    "ParallelResult", "SelfOtherTest", "TetrachoricResult", "aurc", "auroc", "axis_alignment", "axis_positions",
    "bh_fdr", "bootstrap_ci", "brier", "bvn_cdf", "confidence_to_ratings", "cor_smooth", "ece",
    "excess_aurc", "factor_analysis", "flag_counts", "h_proxy", "item_scores", "metad",
    "metad_trials", "oblimin", "pairwise_calibration", "parallel_analysis", "policy_gains",
    "policy_table", "risk_coverage", "self_other_test", "tetrachoric", "thresholds", "trials_to_counts",
    "type2_auroc", "unanimous_items", "varimax",
]

# Intervals for verdicts (AUROC with DeLong's interval, proportions, bootstrap over items).
from .intervals import (AurocResult, BootResult, auroc_ci, bootstrap_difference,  # noqa: E402
                        bootstrap_items, proportion_ci)

__all__ += ["AurocResult", "BootResult", "auroc_ci", "bootstrap_difference", "bootstrap_items",
            "proportion_ci"]
