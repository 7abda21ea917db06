"""The rank-one chapter's lines: labels follow the stated lines (never parallel analysis alone),
the unanimous-item check says how much it removes and is "not informative" when it removes
little, and a count of panels names the design it counts."""

import numpy as np
import pandas as pd

from metacog.hypotheses import rank_one as hr
from metacog.hypotheses.rank_one.display import display_removed, shape_labels
from metacog.hypotheses.verdict import INSUFFICIENT, SUPPORTED


def _structure(panel, share, share_ci, ratio, ratio_ci, pa=1, design="prospective"):
    return {"panel": panel, "design": design, "matrix": "confidence", "subset": "all items", "models": 20,
            "items": 500, "eig_share": share, "eig_share_ci_low": share_ci[0], "eig_share_ci_high": share_ci[1],
            "eig_ratio": ratio, "eig_ratio_ci_low": ratio_ci[0], "eig_ratio_ci_high": ratio_ci[1],
            "pa_factors": pa, "note": ""}


def test_shape_labels_follow_the_lines_not_parallel_analysis():
    # parallel analysis keeps one factor, but the ratio is below 4: not labelled 'rank one'
    one = _structure("spar", 0.44, (0.40, 0.48), 2.5, (2.2, 2.9), pa=1)
    # parallel analysis keeps 31 factors, the ratio above 4: labelled by the lines, not by 31
    many = _structure("cal", 0.50, (0.49, 0.51), 9.0, (8.0, 10.0), pa=31)
    labels = shape_labels(pd.DataFrame([one, many]))
    assert labels == ["share ≥ 0.3; eig1/eig2 < 4", "share ≥ 0.3; eig1/eig2 ≥ 4"]
    assert not any("rank one" in x for x in labels)
    share, ratio = hr.verdicts(pd.DataFrame([one]))
    assert share.status == SUPPORTED and ratio.status == "not supported"


def _aligned(panel, total, contested, r=0.05, design="prospective"):
    base = {"panel": panel, "design": design, "models": 20, "note": ""}
    return [{**base, "subset": "all", "items": total, "r_items": 0.9, "r_items_ci_low": 0.88, "r_items_ci_high": 0.92},
            {**base, "subset": "contested", "items": contested, "r_items": r, "r_items_ci_low": r - 0.02,
             "r_items_ci_high": r + 0.02}]


def test_a_unanimous_check_that_removes_almost_nothing_is_not_informative():
    # 83 models: removing unanimous items leaves 11,881 of 12,032
    a = pd.DataFrame(_aligned("big", 12032, 11881) + _aligned("small", 1000, 400))
    k = hr.removed_items(a).set_index("panel")
    assert k.loc["big", "removed"] == 151 and not k.loc["big", "informative"]
    assert k.loc["small", "removed"] == 600 and k.loc["small", "informative"]
    big, small = hr.verdicts(pd.DataFrame(columns=["matrix", "subset"]), a)
    assert big.status == INSUFFICIENT and big.reason.startswith("not informative: removing unanimous items "
                                                                "removes 151 items of 12,032 (1.3%)")
    assert small.status == SUPPORTED and "removes 600 items of 1,000 (60.0%)" in small.reason
    shown = display_removed(a)
    assert list(shown.iloc[:, -1]) == ["no: not informative", "yes"]


def test_counts_of_panels_name_their_design():
    rows = [_structure(f"A{j}", 0.5, (0.45, 0.55), 6.0, (5.0, 7.0), design="after answering") for j in range(3)]
    rows.append(_structure("P", 0.5, (0.45, 0.55), 6.0, (5.0, 7.0), design="prospective"))
    t = pd.DataFrame(rows)
    para = hr.verdict_paragraph(hr.verdicts(t), t)
    assert "all 3 of its after-answering panels (A0, A1 and A2)" in para
    assert para.index("not paper 1's design") < para.index("all 3 of its after-answering panels")
    assert "its one prospective panel (P)" in para
    assert "of its panels" not in para
    assert np.isfinite(t["eig_share"]).all()
