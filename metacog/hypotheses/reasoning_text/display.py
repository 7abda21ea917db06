"""What the reasoning-text page shows: the pooled models per source (:func:`pooled_table`), the
notice at the top of the page when no model passes the gate (:func:`no_model_notice`), and the
probe beside the model's own judgments (:func:`display`)."""

from __future__ import annotations

import pandas as pd

from metacog.hypotheses.common import short_model
from metacog.hypotheses.adequacy import failed_rules
from metacog.tidy.phrasing import join
from metacog.tidy.report import escape_text, fmt_ci, pretty, warning

#: Fewer correct (or wrong) texts than this and no AUROC is printed (the chapter's MIN_CLASS).
MIN_CLASS = 10
#: The model's own scores, as the page names them.
JUDGMENTS = {"confidence": "own Yes/No", "p_yes": "own first-token P(Yes)"}


def pooled_table(result: TextProbeComparison):
    """Which models each source pools, for a page: the models with reasoning text, those pooled
    (they pass the gate), those left out (at chance or not following the format) and any pooled
    without a chance test."""
    from metacog.tidy.report import pretty_or

    unknown = result.ungated
    rows = [{"source": s, "models with texts": len(all_),
             "pooled": join([short_model(m) for m in kept]),
             "left out (at chance or off-format)": join([short_model(m) for m in all_ if m not in kept]),
             "pooled without a chance test (chance unknown)": join([short_model(m) for m in unknown.get(s, [])])}
            for s, (kept, all_) in result.models.items()]
    return pretty_or(pd.DataFrame(rows), "No source has models with reasoning text, so none is pooled.")


def no_model_notice(result: dict) -> str:
    """A MyST warning for the top of the page when no source pools any model (every model with
    reasoning text is at chance or off-format): the page then gives no estimate and draws no
    verdict. Lists each source's models with the rule each fails, as the benchmark pages do
    (the benchmark pages' ``no_signal_notice``). '' when some source pools a model."""
    if any(kept for kept, _ in result["models"].values()):
        return ""
    if result["models"]:
        head = ("No model on this page answers above chance and follows the format on any source, so "
                "the page gives no estimate of the text probe and draws no verdict on whether reasoning "
                "text carries a model's uncertainty: no source has a model above chance.")
    else:  # every source was left out before any model was gated
        head = ("No source given could be analysed, so the page gives no estimate of the text probe and "
                "draws no verdict on whether reasoning text carries a model's uncertainty.")
    lines = []
    for src, (_, texts) in result["models"].items():
        g = result.gates.get(src)
        if g is None:
            continue
        why = [f"{short_model(r['model'])} {failed_rules(r) or 'does not follow the format'}"
               for r in g[g["model"].isin(texts)].to_dict("records")]
        lines.append(f"- {escape_text(src)}: " + escape_text("; ".join(why)) + ".")
    lines += [f"- {escape_text(s)}: {escape_text(why)}." for s, why in result["skipped"].items()
              if s not in result["models"]]
    return warning(head + ("\n\n" + "\n".join(lines) if lines else ""))


def _cell(r: dict) -> str:
    if r["n_pos"] < MIN_CLASS or r["n_neg"] < MIN_CLASS:
        few = r["n_pos"] if r["n_pos"] < r["n_neg"] else r["n_neg"]
        kind = "correct" if r["n_pos"] < r["n_neg"] else "wrong"
        return f"insufficient evidence (only {few} {kind} texts)"
    return fmt_ci(r["auroc"], r["ci_low"], r["ci_high"])


def display(table: pd.DataFrame):
    """The comparison for a page: one row per source, the probe and each judgment side by side,
    and the probe's lead over the model's own judgment (its Yes/No, or the confidence it stated)
    with its bootstrap interval."""
    if table.empty:
        from IPython.display import Markdown

        return Markdown("No source could be fitted (the sentences around this one say why), so there "
                        "is no comparison to show.")
    out = []
    for src, g in table.groupby("source", sort=False):
        by = {r["score"]: r for r in g.to_dict("records")}
        tp = by["text_probe"]
        row = {"source": src, "models pooled": tp["models"], "texts": tp["texts"], "correct": tp["n_pos"],
               "AUROC, text probe (95% CI)": _cell(tp)}
        for c in JUDGMENTS:
            if c in by:
                row[f"AUROC, {by[c].get('judgment') or JUDGMENTS[c]} (95% CI)"] = _cell(by[c])
        if "confidence" in by:
            r = by["confidence"]
            row[f"probe minus {r.get('judgment') or JUDGMENTS['confidence']} (95% CI)"] = (
                fmt_ci(r["diff"], r["diff_ci_low"], r["diff_ci_high"])
                if min(r["n_pos"], r["n_neg"]) >= MIN_CLASS else "insufficient evidence")
        out.append(row)
    return pretty(pd.DataFrame(out))
