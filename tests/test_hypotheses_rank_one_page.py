"""The rank-one page's comparison with paper 1, its check on panels that mix protocols, and its
two-factor exercise, on planted data."""

import numpy as np
import pandas as pd

from metacog.hypotheses import pairwise as hp
from metacog.hypotheses import rank_one as hr
from metacog.hypotheses.panels import Panel, PanelSet
from metacog.power import simulate
from metacog.tidy.tables import binarize_report


def _panel(C, Y, temperature, wording, name="mixed"):
    """A panel of binary confidence ``C`` and correctness ``Y`` whose rows record each model's
    temperature and wording."""
    rows = []
    for m in C.columns:
        for i in C.index:
            rows.append({"model": m, "item_id": str(i), "probe": "prospective", "confidence": C.at[i, m],
                         "correct": Y.at[i, m], "temperature": temperature[m], "wording": wording[m]})
    return Panel(source=name, label=name, benchmark="sim", probe="prospective", table=pd.DataFrame(rows),
                 cut="binary", confidence_raw=C, confidence=C, correct=Y, cut_report=binarize_report(C))


def _mixed_panel():
    """Eight one-factor models at temperature 0 and four independent coin-flip models at 1."""
    p = simulate.population(8, 300, kappa=0.0, seed=3, sigma_e=0.4)
    rng = np.random.default_rng(4)
    noise = pd.DataFrame((rng.random((300, 4)) < 0.5).astype(float), index=p.confidence.index,
                         columns=[f"noisy {j}" for j in range(4)])
    C = pd.concat([p.confidence, noise], axis=1)
    Y = pd.concat([p.correct, p.correct.iloc[:, :4].set_axis(noise.columns, axis=1)], axis=1)
    temperature = {m: (1.0 if m.startswith("noisy") else 0.0) for m in C.columns}
    wording = {m: f"w{j % 3}" for j, m in enumerate(C.columns)}
    return _panel(C, Y, temperature, wording)


def test_mixed_protocols_counts_models_per_temperature_and_wordings():
    ps = PanelSet([_mixed_panel()], pd.DataFrame())
    mixed = hr.mixed_protocols(ps)
    assert len(mixed) == 1
    r = mixed.iloc[0]
    assert r["by_temperature"] == {0.0: 8, 1.0: 4} and r["wordings"] == 3
    assert "8 models at temperature 0 and 4 models at temperature 1" in r["sentence"]
    assert "3 wordings" in r["sentence"]


def test_a_panel_of_one_protocol_is_not_listed():
    C = simulate.population(6, 100, kappa=0.0, seed=1).confidence
    Y = C.copy()
    one = _panel(C, Y, {m: 0.0 for m in C.columns}, {m: "w" for m in C.columns}, name="plain")
    ps = PanelSet([one], pd.DataFrame())
    assert hr.mixed_protocols(ps).empty
    sens = hr.temperature_sensitivity(ps, [], n_iter=3, n_boot=30)
    assert sens.empty
    assert hr.sensitivity_sentence(hr.mixed_protocols(ps), sens).startswith("No panel")


def test_temperature_sensitivity_decides_again_on_the_kept_models():
    panel = _mixed_panel()
    ps = PanelSet([panel], pd.DataFrame())
    settings = dict(n_iter=3, n_boot=40, seed=0)
    structure = hr.table(ps, **settings)
    aligned = hr.alignment_table(ps)
    decided = hr.verdicts(structure, aligned)
    sens = hr.temperature_sensitivity(ps, decided, **settings)
    assert len(sens) == 3 and set(sens["kept"]) == {8} and set(sens["models"]) == {12}  # share, ratio, link
    # the kept models' verdicts are the chapter's own verdicts on a panel of those models alone
    kept = [m for m in panel.models if not m.startswith("noisy")]
    alone = Panel(source="alone", label="alone", benchmark="sim", probe="prospective", table=panel.table,
                  cut="binary", confidence_raw=panel.confidence[kept], confidence=panel.confidence[kept],
                  correct=panel.correct[kept], cut_report=binarize_report(panel.confidence[kept]))
    ref = hr.verdicts(hr.table(PanelSet([alone], pd.DataFrame()), **settings),
                      hr.alignment_table(PanelSet([alone], pd.DataFrame())))
    assert list(sens["status (temperature 0 only)"]) == [v.status for v in ref]
    assert list(sens["status (whole panel)"]) == [v.status for v in decided]
    for r in sens.to_dict("records"):
        assert r["changes"] == ("yes" if r["status (whole panel)"] != r["status (temperature 0 only)"] else "no")
    text = hr.sensitivity_sentence(hr.mixed_protocols(ps), sens)
    assert "decided again on the 8 models at temperature 0 alone" in text
    assert ("no verdict changes" in text) == (sens["changes"] == "no").all()


def _comparison():
    p = simulate.population(8, 200, kappa=0.5, seed=2)
    t = hp.analyse(p.confidence, p.correct, n_perm=49, n_boot=30, n_null=40)
    before = t.assign(panel="before", source="s", benchmark="b", probe="prospective", timing="before answering")
    after = t.assign(panel="after", source="s", benchmark="b", probe="verbal", timing="after answering")
    chance = t.assign(panel="at chance", source="s", benchmark="b", probe="prospective",
                      timing="before answering")
    return hp.paper1_comparison(pd.concat([before, after, chance], ignore_index=True))


def test_paper1_blocks_split_by_design_and_gate_out_models_at_chance():
    c = _comparison()
    gate = pd.DataFrame({"panel": ["before", "after", "at chance"], "models": [8, 8, 3], "passing": [8, 7, 0],
                         "reasons": [[], ["m7: 2 correct of 40"], ["a: 0 correct", "b: 2 correct", "c: 3 correct"]]})
    blocks = hr.paper1_blocks(c, gate, n_null=40)
    comparable, other = blocks["comparable"], blocks["other"]
    assert list(comparable["data"]) == [f"paper 1: {b}" for b in hp.PAPER1] + ["before", "at chance"]
    assert list(other["data"]) == ["after"]
    tau = next(col for col in comparable.columns if col.startswith("mean τ-b"))
    row = comparable.set_index("data").loc["at chance"]
    assert row[tau] == "no estimate (models at chance: 0 of 3 pass the adequacy gate)"
    assert all(pd.isna(row[col]) for col in comparable.columns if "null mean" in col or col.startswith("% of"))
    assert "95% CI" in comparable.set_index("data").loc["before", tau]
    assert comparable.set_index("data").loc["before", "models passing the adequacy gate"] == "8 of 8"
    assert comparable.set_index("data").loc["paper 1: SQuAD", "models passing the adequacy gate"] == "–"
    assert any("mean of 40 simulated draws, exact value 0" in col for col in comparable.columns)
    text = hr.paper1_sentence(c, gate, n_null=40)
    assert "In at chance 0 of 3 models pass the adequacy gate" in text and "gives no estimate" in text
    assert "after (7 of 8 models pass)" in text
    assert "mean of 40 simulated draws" in text


def test_second_factor_names_its_rotation_and_gives_unrotated_loadings():
    p = simulate.population(10, 400, kappa=0.0, seed=6, sigma_e=0.4)
    panel = _panel(p.confidence, p.correct, {m: 0.0 for m in p.confidence.columns},
                   {m: "w" for m in p.confidence.columns}, name="one factor")
    second = hr.second_factor([panel], top=10)
    assert second.attrs["rotation"] == hr.ROTATION == "oblimin"
    assert {"factor 1", "factor 2", "unrotated 1", "unrotated 2"} <= set(second.columns)
    # one planted axis: before rotation every model loads on the first factor
    assert (second["unrotated 1"] > 0.3).all()
    assert np.isfinite(second.attrs["factor_correlation"])


def test_a_verdict_the_one_temperature_check_overturns_is_lowered_and_says_why():
    from metacog.hypotheses import rank_one as hr
    from metacog.hypotheses.verdict import INSUFFICIENT, NOT_SUPPORTED, SUPPORTED, decide

    a = decide("P: confidence is dominated by one factor", "eig1/eig2", 6.0, 5.2, 7.0, line=4.0,
               direction="greater", n={"models": 18}, min_counts={"models": 5})
    b = decide("P: the axes align", "r", 0.2, 0.1, 0.3, line=0.5, direction="greater",
               n={"models": 18}, min_counts={"models": 5})
    c = decide("Q: confidence is dominated by one factor", "eig1/eig2", 6.0, 5.2, 7.0, line=4.0,
               direction="greater", n={"models": 9}, min_counts={"models": 5})
    assert (a.status, b.status, c.status) == (SUPPORTED, NOT_SUPPORTED, SUPPORTED)
    only = "temperature 0 only"
    sens = pd.DataFrame([
        {"panel": "P", "claim": "confidence is dominated by one factor", "kept": 12, only: "4.68 (95% CI 3.92 to 5.40)",
         f"status ({only})": INSUFFICIENT, "changes": "yes"},
        {"panel": "P", "claim": "the axes align", "kept": 12, only: "0.22 (95% CI 0.12 to 0.31)",
         f"status ({only})": NOT_SUPPORTED, "changes": "no"}])
    out = hr.temper([a, b, c], sens)
    assert [v.status for v in out] == [INSUFFICIENT, NOT_SUPPORTED, SUPPORTED]
    assert "supported on the whole panel" in out[0].reason and "12 models at temperature 0" in out[0].reason
    assert "4.68 (95% CI 3.92 to 5.40)" in out[0].reason and "mixing sampling temperatures" in out[0].reason
    assert out[1] is b and out[2] is c
    assert hr.temper([a], sens.iloc[:0]) == [a]
