import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from metacog.hypotheses.miscalibration import audit
def synthetic(seed=0, n_domains=6, n_items=20):
    """C0 answers confidently; C2 abstains exactly where C0 was wrong, more so in 'hard' domains."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(n_domains):
        err = 0.1 + 0.1 * d  # domain d: C0 error rate rises with d
        for i in range(n_items):
            gold = "yes" if i % 2 else "no"
            wrong = rng.random() < err
            c0 = ("no" if gold == "yes" else "yes") if wrong else gold
            rows.append(("m", f"d{d}", f"{d}-{i}", "c0", c0, 0.9, 0.0 if wrong else 1.0))
            rows.append(("m", f"d{d}", f"{d}-{i}", "c1", c0, 0.8, 0.0 if wrong else 1.0))
            c2 = "abstain" if wrong else gold
            rows.append(("m", f"d{d}", f"{d}-{i}", "c2", c2, 0.9, np.nan if wrong else 1.0))
    return pd.DataFrame(rows, columns=["model", "domain", "item_id", "probe", "decision", "confidence", "correct"])


def test_domain_table_gains_and_predictors():
    df = synthetic()
    t = audit.domain_table(df).set_index("domain")
    # abstaining on a wrong C0 answer at 0.9 changes the loss from 0.81 to 0.25: gain 0.56 per such item
    d0 = df[(df.domain == "d0") & (df.probe == "c0")]
    expected = (d0.correct == 0).mean() * (0.81 - 0.25)
    assert t.loc["d0", "gain"] == pytest.approx(expected)
    assert t.loc["d0", "c0_error"] == pytest.approx((d0.correct == 0).mean())
    assert (t["c0_brier"] >= 0).all() and (t["h_proxy"] > 0).all()


def test_every_predictor_ranks_domains_like_the_gain_here():
    t = audit.domain_table(synthetic())
    r = audit.ranking(t).set_index("predictor")
    assert r.loc["c0_error", "spearman"] == pytest.approx(1.0)
    rho, _ = sps.spearmanr(t["h_proxy"], t["gain"])
    assert r.loc["h_proxy", "spearman"] == pytest.approx(rho)
    assert r.loc["h_proxy", "spearman"] > 0.8


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="policy 'c9'"):
        audit.domain_table(synthetic(), policy="c9")
