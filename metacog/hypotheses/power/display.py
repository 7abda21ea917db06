"""Page tables and prose for the power chapter, from the tables of
:mod:`metacog.hypotheses.power` and :mod:`metacog.hypotheses.power.design`.

Every function returns a DataFrame of display columns (``pretty()`` it for a page) or a
string of prose; none computes a statistic.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metacog.tidy.phrasing import which
from metacog.tidy.report import escape_text, fmt_count, fmt_num, fmt_p, fmt_p_eq, fmt_range


def _f(x) -> bool:
    try:
        return bool(np.isfinite(float(x)))
    except (TypeError, ValueError):
        return False


def fmt_kappa(k, kappa_max: float, digits: int = 3) -> str:
    """A minimum detectable kappa for a table: '0.047', or 'more than 1' when never reached."""
    return fmt_num(k, digits) if _f(k) else f"more than {kappa_max:g}"


def fmt_items(r: dict) -> str:
    """'1,390 of 1,500' (complete block of the panel), '2,000 of 9,396 (random subsample)'."""
    if not _f(r.get("items_block")):
        return f"{int(r['items']):,}"
    used, block, total = int(r["items"]), int(r["items_block"]), int(r["items_total"])
    if r.get("subsampled"):
        return f"{used:,} of {block:,} complete (random subsample)"
    return f"{used:,}" if used == total else f"{used:,} of {total:,}"


def _analysed(t: pd.DataFrame) -> pd.DataFrame:
    return t[t["note"].fillna("") == ""] if "note" in t else t


def display_fits(power_table: pd.DataFrame) -> pd.DataFrame:
    """The matched simulator per analysed panel: models, items, the observed moments and the fit."""
    t = _analysed(power_table)
    recs = t.to_dict("records")
    return pd.DataFrame({
        "panel": t["panel"], "models": t["models"], "items analysed": [fmt_items(r) for r in recs],
        "ρ correctness": t["rho_correct"], "ρ confidence": t["rho_confidence"],
        "link to other models' correctness": t["link_other"], "alignment": t["alignment"],
        "σᵤ": t["sigma_u"], "λ (confidence fit)": t["lam"], "λ (link fit)": t["lam_link"]})


def display_detectable(power_table: pd.DataFrame, *, kappa_max: float = 1.0) -> pd.DataFrame:
    """Minimum detectable kappa per panel: the pairwise test (range over the two fits) with its
    latent gap, the excess of T it corresponds to, and the factor test."""
    t = _analysed(power_table)
    rows = []
    for r in t.to_dict("records"):
        ks = [r[f"mdk_pairwise_{f}"] for f in ("confidence", "link")]
        gaps = [r[f"gap_pairwise_{f}"] for f in ("confidence", "link")]
        pair = (fmt_range(min(ks), max(ks), digits=3, sep=" to ") if all(_f(k) for k in ks)
                else f"more than {kappa_max:g}" if not any(_f(k) for k in ks)
                else fmt_kappa(next(k for k in ks if _f(k)), kappa_max) + " (one fit only)")
        fin = [g for g in gaps if _f(g)]
        rows.append({
            "panel": r["panel"], "models": r["models"], "items": f"{int(r['items']):,}",
            "pairwise test": "paired t-test" if r.get("method") == "ttest" else "permutation",
            "pairwise: detectable κ": pair,
            "latent gap Δ there": fmt_range(min(fin), max(fin), digits=3, sep=" to ") if fin else "–",
            "T above its null there": ("more than " if r.get("detectable_at_max") else "")
            + fmt_num(r["detectable_excess"], 3),
            "factor test: detectable κ": fmt_kappa(r["mdk_factor"], kappa_max)})
    return pd.DataFrame(rows)


def display_observed(power_table: pd.DataFrame, *, kappa_max: float = 1.0) -> pd.DataFrame:
    """The observed statistic per panel: T with its interval, the permutation p-value, the
    mean and p-value of the simulated null without self-knowledge (range over the two fits), the
    permutation test's false-positive rate in those simulated populations, the kappa T points to and the kappa at its interval's upper end
    (a bound; it rules that kappa out only where the verdict is "not supported")."""
    t = _analysed(power_table)
    rows = []
    for r in t.to_dict("records"):
        ps = [r[f"null_p_{f}"] for f in ("confidence", "link")]
        means = [r[f"null_mean_{f}"] for f in ("confidence", "link")]
        fpr = [r[f"fpr_{f}"] for f in ("confidence", "link")]
        rows.append({
            "panel": r["panel"], "models": r["models"], "items": f"{int(r['items']):,}",
            "T, self minus other τ-b (95% CI)": _ci(r["T"], r["T_ci_low"], r["T_ci_high"]),
            "permutation p" if r.get("method") != "ttest" else "t-test p": fmt_p(r["perm_p"]),
            "T in the simulated null without self-knowledge": fmt_range(min(means), max(means), digits=3,
                                                                        sep=" to "),
            "simulated-null p": _p_range(ps),
            "permutation false-positive rate": fmt_range(min(fpr), max(fpr), digits=2, sep=" to "),
            "κ that T points to": _kappa_word(r["equiv_kappa"], 2 * kappa_max),
            "κ at the interval's upper end (a bound)": _kappa_word(r["ruled_out_kappa"], 2 * kappa_max)})
    out = pd.DataFrame(rows)
    return out.fillna("–") if len(out) else out


def quantity_table(summary: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """:func:`metacog.tidy.report.quantities`: each value formatted on its own."""
    from metacog.tidy.report import quantities

    return pd.DataFrame(quantities(summary, digits))


def _ci(est, lo, hi) -> str:
    from metacog.tidy.report import fmt_ci

    return fmt_ci(est, lo, hi, digits=3)


def _p_range(ps) -> str:
    a, b = fmt_p(min(ps)), fmt_p(max(ps))
    return a if a == b else f"{a} to {b}"


def _kappa_word(k, top: float) -> str:
    return fmt_num(k, 3) if _f(k) else f"beyond {top:g}"


def display_local(local: pd.DataFrame, *, kappa_max: float = 3.0) -> pd.DataFrame:
    """The local-design table: settings, items, test, detectable kappa and power at each kappa."""
    power_cols = [c for c in local.columns if c.startswith("power at kappa")]
    out = pd.DataFrame({"settings": local["settings"], "models": local["models"], "items": local["items"],
                        "test": local["test"].map({"permutation": "permutation", "ttest": "paired t-test"}),
                        "detectable κ (80% power)": [fmt_kappa(k, kappa_max) for k in local["mdk"]]})
    for c in power_cols:
        out[c.replace("power at kappa", "power at κ =")] = local[c]
    return out


def block_notes(power_table: pd.DataFrame) -> str:
    """One bullet per panel saying which block was analysed (complete block, models dropped,
    subsample) or why the panel was not analysed, as Markdown (the panels' names escaped)."""
    lines = []
    for r in power_table.to_dict("records"):
        if r.get("note"):
            lines.append(f"- **{escape_text(r['panel'])}**: not analysed — {escape_text(r['note'])}.")
            continue
        bits = [f"{fmt_count(int(r['models']), 'model')} × {fmt_count(int(r['items']), 'item')} analysed"]
        if int(r.get("models_dropped", 0) or 0):
            bits.append(f"{fmt_count(int(r['models_dropped']), 'model')} of {int(r['models_total'])} left out "
                        f"to keep a complete block")
        if int(r.get("models_constant", 0) or 0):
            bits.append(f"{fmt_count(int(r['models_constant']), 'model')} left out for never varying")
        if r.get("subsampled"):
            bits.append(f"a random {int(r['items']):,} of the {int(r['items_block']):,} items of its complete "
                        f"block, to keep the simulations fast")
        elif int(r["items"]) < int(r["items_total"]):
            bits.append(f"{fmt_count(int(r['items_total']) - int(r['items']), 'item')} without an answer "
                        f"from every kept model left out")
        if r.get("method") == "ttest":
            bits.append("the paired t-test over models replaces the permutation test, whose smallest "
                        "possible p-value with so few models is above α")
        lines.append(f"- **{escape_text(r['panel'])}**: " + "; ".join(bits) + ".")
    if not lines:
        return "No panel was given."
    analysed = [r for r in power_table.to_dict("records") if not r.get("note")]
    part = [escape_text(r["panel"]) for r in analysed
            if int(r["models"]) < int(r["models_total"]) or int(r["items"]) < int(r["items_total"])]
    if part:
        lines.append(f"\nOn {which(part, len(analysed), 'analysed panel')} the block is not the whole panel, so the "
                     f"self-minus-other statistic T below is computed on other data than the pairwise "
                     f"chapter's T for the same panel (the same statistic and resampling, on fewer models or "
                     f"items), and its value and interval differ from that chapter's.")
    return "\n".join(lines)


def verdict_paragraph(verdicts: list, power_table: pd.DataFrame, *, margin: float = 0.02,
                      kappa_max: float = 1.0) -> str:
    """The closing prose, one sentence per design (paper 1's prospective design first; a count
    of panels is made within one design only): where an excess beyond ``margin`` shows, where an
    excess above 0 is not shown to exceed ``margin``, where ``margin`` or more is ruled out, which
    nulls are too weak to mean anything (the design cannot detect ``margin``), and the kappa at
    the upper end of each panel's interval: "rules out" only where the verdict is "not supported"
    (a powered exclusion), a bound elsewhere."""
    from metacog.hypotheses.by_design import by_design, design_head
    from metacog.hypotheses.verdict import INSUFFICIENT, NEGLIGIBLE, NOT_SUPPORTED, SUPPORTED

    if not verdicts:
        return "No panel could be analysed."
    m = f"{margin:g}"
    parts = []
    for design, vs in by_design(verdicts, power_table).items():
        name = [v.claim.split(":")[0] for v in vs]
        n = len(vs)
        sup = [p for p, v in zip(name, vs) if v.status == SUPPORTED]
        above = [p for p, v in zip(name, vs) if v.status == INSUFFICIENT and v.basis == "sesoi"]
        nos = [p for p, v in zip(name, vs) if v.status == NOT_SUPPORTED]
        neg = [p for p, v in zip(name, vs) if v.status == NEGLIGIBLE]
        weak = [p for p, v in zip(name, vs) if v.status == INSUFFICIENT and v.basis != "sesoi"
                and v.detectable is not None and v.detectable > margin]
        other = [p for p, v in zip(name, vs) if v.status == INSUFFICIENT and p not in weak and p not in above]
        s = (f"{design_head(design)}: a self-signal beyond base rates larger than the smallest "
             f"excess of interest ({m} τ-b) shows in {which(sup, n, 'panel')}")
        if above:
            s += (f"; an excess above 0 but not shown to exceed {m} in {which(above, n, 'panel')}, "
                  f"which is therefore not called supported")
        s += (f"; the excess is negligible (its interval lies inside ±{m} τ-b, within the line) in "
              f"{which(neg, n, 'panel')}")
        if nos:
            s += f"; an excess of {m} τ-b or more is ruled out, the interval reaching below −{m}, in {which(nos, n, 'panel')}"
        s += "."
        parts.append(s)
        if weak:
            parts.append(f"The evidence is insufficient in {which(weak, n, 'panel')} of this design because "
                         f"it could not detect an excess of {m}: a null there is not evidence of absence.")
        if other:
            parts.append(f"In {which(other, n, 'panel')} of this design the interval is too wide or the "
                         f"panel too small to decide.")
    status = {v.claim.split(":")[0]: v.status for v in verdicts}
    bounds = [r for r in power_table.to_dict("records") if _f(r.get("ruled_out_kappa"))]
    powered = (NOT_SUPPORTED, NEGLIGIBLE)
    ruled = [_kappa_bound(r) for r in bounds if status.get(r["panel"]) in powered]
    only = [_kappa_bound(r) for r in bounds if status.get(r["panel"]) not in powered]
    if ruled:
        parts.append("In the simulator's units, where the verdict is negligible or not supported the interval rules out "
                     "a larger signal: " + "; ".join(f"{p} rules out κ above {k}" for p, k in ruled) + ".")
    if only:
        head = ("Elsewhere the upper end of T's interval" if ruled else
                "No verdict here is \"negligible\" or \"not supported\", so in each panel the upper end of T's interval")
        parts.append(head + " is a bound, not an exclusion the design was "
                     "powered for; in the simulator's units it corresponds to "
                     + "; ".join(f"κ = {k} in {p}" for p, k in only) + ".")
    return " ".join(parts)


def _kappa_bound(r: dict) -> tuple[str, str]:
    """(panel, "κ (a latent self-minus-other gap of Δ)") at the upper end of T's interval."""
    gap = f" (a latent self-minus-other gap of {fmt_num(r['ruled_out_gap'], 2)})" if _f(r.get("ruled_out_gap")) else ""
    return r["panel"], f"{fmt_num(r['ruled_out_kappa'], 2)}{gap}"


def observed_sentence(r: dict, *, alpha: float = 0.05) -> str:
    """One sentence on a panel's observed T against its simulated null without self-knowledge (link fit)."""
    word = "rejects" if r["perm_p"] < alpha else "does not reject"
    test = "paired t-test" if r.get("method") == "ttest" else "permutation test"
    return (f"{r['panel']}: T = {fmt_num(r['T'], 3)}; the {test} {word} at α = {alpha:g} "
            f"({fmt_p_eq(r['perm_p'])}), and against simulated populations without self-knowledge "
            f"that keep its base rates "
            f"{fmt_p_eq(r['null_p_link'])}.")
