"""Statistics for metacog-book: tetrachoric factor structure, pairwise calibration, calibration
metrics, meta-d', policy-aware metrics, the self-versus-other test, internal against population
AUROC and bootstrap intervals.

Binary rating tables are items x models DataFrames of 0/1/NaN throughout.
"""

from .axis import AxisResult, axis_alignment, axis_positions, item_scores
from .bootstrap import bootstrap_ci
from .bvn import bvn_cdf
from .calibration import (BrierResult, ECEResult, aurc, auroc, brier, ece, excess_aurc,
                          risk_coverage, smooth_ece, type2_auroc)
from .factor import FactorResult, factor_analysis, oblimin, one_factor_share, varimax
from .metad import MetaDResult, confidence_to_ratings, metad, metad_trials, trials_to_counts
from .parallel import ParallelResult, parallel_analysis
from .pairwise import (PairwiseResult, base_rate_null, bh_fdr, holm, pairwise_calibration, tau_matrix,
                       unanimous_items, unordered_pairs)
from .population import delong_paired, internal_population
from .policy import flag_counts, h_proxy, policy_gains, policy_table
from .selfother import SelfOtherTest, self_other_test
from .tetrachoric import TetrachoricResult, cor_smooth, tetrachoric, thresholds

__all__ = [
    "AxisResult", "BrierResult", "ECEResult", "FactorResult", "MetaDResult", "PairwiseResult",
    "ParallelResult", "SelfOtherTest", "TetrachoricResult", "aurc", "auroc", "axis_alignment", "axis_positions",
    "base_rate_null", "bh_fdr", "bootstrap_ci", "holm", "brier", "bvn_cdf", "confidence_to_ratings", "cor_smooth", "delong_paired", "ece",
    "excess_aurc", "factor_analysis", "flag_counts", "h_proxy", "internal_population", "item_scores", "metad",
    "metad_trials", "oblimin", "one_factor_share", "pairwise_calibration", "parallel_analysis", "policy_gains",
    "policy_table", "risk_coverage", "self_other_test", "smooth_ece", "tau_matrix", "tetrachoric", "thresholds",
    "trials_to_counts", "type2_auroc", "unanimous_items", "unordered_pairs", "varimax",
]

# Intervals for verdicts (AUROC with DeLong's interval, proportions, bootstrap over items).
from .intervals import (AurocResult, BootResult, auroc_ci, bootstrap_difference,  # noqa: E402
                        bootstrap_items, correlation_ci, proportion_ci)

__all__ += ["AurocResult", "BootResult", "auroc_ci", "bootstrap_difference", "bootstrap_items",
            "correlation_ci", "proportion_ci"]

# One resampling engine: bootstrap count weights applied to weighted 2x2 tables.
from . import resample  # noqa: E402
from .blas import single_blas_thread  # noqa: E402

__all__ += ["resample", "single_blas_thread"]
