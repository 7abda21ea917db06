"""What only one benchmark asks: the section each benchmark page has of its own.

notebooks/benchmark.md is one template run once per benchmark; this module is the one place
where the pages differ. :func:`own_section` picks the analysis of the page's benchmark and
returns an :class:`OwnSection`: a tidy table (every rate with its Wilson 95% interval), a
sentence built from that table alone, and the fixed question the benchmark raises.

- SQuAD (:func:`squad`): accuracy without the passage by the kind of gold answer (a number or
  date, or other text);
- MMLU-Pro (:func:`mmlu_pro`): accuracy without the options under the strict grader and a
  lenient one, and whether the context gain's verdict would read otherwise;
- LegalBench (:func:`legalbench`): accuracy without the task definition against always giving
  the most common label of the item's answer set;
- MATH (:func:`math`): replies cut at the token cap, and accuracy among the replies that are not;
- Omni-MATH (:func:`omni`): accuracy with and without the solution by difficulty band;
- SciCode (:func:`scicode`): attempts whose code does not parse, parses and fails the tests,
  or passes.

A benchmark with no analysis here (a researcher's own run) gets a section that says so.
"""

from __future__ import annotations

import ast
import re
import numpy as np
import pandas as pd

from metacog.hypotheses.common import short_model
from metacog.pages.benchmark.own_rates import (DESIGNS, OwnSection, apart, attempts, by_item, rate_row, rate_table,
                                               rate_text, share_text)
from metacog.tidy import phrasing
from metacog.tidy.report import fmt_num

#: Omni-MATH difficulty bands (the rating runs from 1 to 10): below 4, 4 to 5 inclusive, above 5.
BANDS = ("below 4", "4 to 5", "above 5")
#: An answer set needs this many items before its most common label is a bar of its own.
MIN_SET = 10
_MONTHS = re.compile(r"\b(january|february|march|april|may|june|july|august|september|october|"
                     r"november|december)\b", re.I)


# --------------------------------------------------------------------------- SQuAD

def answer_kind(gold) -> str:
    """'number or date' when the first gold answer holds a digit or a month's name, else 'other text'."""
    first = gold[0] if isinstance(gold, (list, tuple)) and len(gold) else gold
    return "number or date" if re.search(r"\d", str(first)) or _MONTHS.search(str(first)) else "other text"


def squad(data: pd.DataFrame, items) -> OwnSection:
    """Accuracy without the passage by the kind of gold answer, per model."""
    q = ("Does the kind of gold answer, a number or date or other text, change how often an answer "
         "given without the passage is right?")
    its = by_item(items)
    d = attempts(data)
    d = d[d["item_id"].astype(str).isin(its)]
    d = d.assign(answer_kind=d["item_id"].astype(str).map(lambda i: answer_kind(its[i].gold)))
    t = rate_table(d, ["model", "answer_kind"])
    if not len(t):
        return OwnSection(None, "No answer without the passage was graded, so the kinds cannot be compared.", q)
    lines, differ = [], []
    for m, g in t.groupby("model", sort=False):
        rows = g.set_index("answer_kind")
        lines.append(f"{m} is right without the passage on "
                     + phrasing.join(rate_text(r, f"{kind} answer") for kind, r in rows.iterrows()))
        if len(rows) == 2:
            s = apart(rows.iloc[0], rows.iloc[1])
            if s:
                differ.append(f"{m} (right more often on {rows.index[0 if s > 0 else 1]} answers)")
    n_models = t["model"].nunique()
    rest = n_models - len(differ)
    others = "the other model" if rest == 1 else f"the other {rest} models"
    end = (f"The two intervals lie apart for {phrasing.join(differ)}; for {others} they overlap." if differ and rest
           else f"The two intervals lie apart for {phrasing.join(differ)}." if differ else
           f"The two intervals overlap for {phrasing.which(t['model'].unique(), n_models, 'model')}: this run "
           "cannot tell whether the kind of gold answer changes how often an answer without the passage is right.")
    return OwnSection(t, "; ".join(lines) + ". " + end, q)


# --------------------------------------------------------------------------- MMLU-Pro

def _norm(text) -> str:
    return re.sub(r"\s+", " ", str(text or "")).strip().casefold()


def lenient_correct(reply, gold_text) -> bool:
    """The gold option's text in the reply as a whole phrase (case and spacing ignored): no letter,
    digit or underscore on either side, so '0' is not found in 'z_0' nor '5' in '0.5'."""
    g = _norm(gold_text)
    return bool(g) and re.search(rf"(?<![\w.]){re.escape(g)}(?![\w])", _norm(reply)) is not None


def mmlu_pro(data: pd.DataFrame, items, page=None, min_conformance: float = 0.8) -> OwnSection:
    """No-context accuracy under the strict grader (the page's) and a lenient one (strict, or the
    gold option's text anywhere in the reply), per model, and the context gain's verdict under each
    (strict: ``page.gain_v`` when given; lenient: the same functions on the regraded answers)."""
    from metacog.pages.benchmark import context_gain, gain_verdicts, withhold_unformatted

    q = ("Without its options an MMLU-Pro answer is free text, graded strictly: how much of the accuracy "
         "without the options, and of the context gain's verdict, does the grader decide?")
    data = data.reset_index(drop=True)  # the regrading below writes by row label
    its = by_item(items)
    gold = {i: it.meta["options"][it.meta["answer_index"]] for i, it in its.items()
            if (it.meta or {}).get("options") and it.meta.get("answer_index") is not None}
    d = attempts(data)
    d = d[d["item_id"].astype(str).isin(gold)]
    if not len(d):
        return OwnSection(None, "No answer without the options was graded, so the graders cannot be compared.", q)
    found = [lenient_correct(r, gold[str(i)]) for r, i in zip(d["raw_text"], d["item_id"])]
    lenient = (d["correct"].astype(float) > 0) | pd.Series(found, index=d.index)
    both = pd.concat([d.assign(grader="strict"), d.assign(grader="lenient", correct=lenient.astype(float))])
    t = rate_table(both, ["model", "grader"])
    regraded = data.copy()
    regraded.loc[d.index, "correct"] = lenient.astype(float)
    strict_v = page.gain_v if page is not None else gain_verdicts(context_gain(data))
    lenient_v = gain_verdicts(context_gain(regraded))
    if page is not None:
        lenient_v = withhold_unformatted(lenient_v, data, page.kept, min_conformance)
    verdict = {("strict", v.claim.split(":")[0]): v.status for v in strict_v}
    verdict.update({("lenient", v.claim.split(":")[0]): v.status for v in lenient_v})
    t["gain_verdict"] = [verdict.get((g, m)) for g, m in zip(t["grader"], t["model"])]
    lines, changed = [], []
    for m, g in t.groupby("model", sort=False):
        s, ln = g.set_index("grader").loc["strict"], g.set_index("grader").loc["lenient"]
        extra = int(ln["k"] - s["k"])
        lines.append(f"{m}: {rate_text(s)} under the strict grader, "
                     + (f"{phrasing.plural(extra, 'more reply', 'more replies')} under the lenient one "
                        f"({share_text(ln)})" if extra else "the same under the lenient one"))
        if s["gain_verdict"] != ln["gain_verdict"]:
            changed.append(f"{m} (from {s['gain_verdict']} to {ln['gain_verdict']})")
    end = (f"Under the lenient grader the context gain's verdict changes for {phrasing.join(changed)}."
           if changed else "Under the lenient grader the context gain's verdict reads the same for "
           f"{phrasing.which(t['model'].unique(), t['model'].nunique(), 'model')}: on this run the grader "
           "does not decide the reading.")
    return OwnSection(t, "Right without the options, " + "; ".join(lines) + ". " + end, q)


# --------------------------------------------------------------------------- LegalBench

def _said(decision) -> str:
    return _norm(decision).strip(" .'\"")


def _top_label(truth: pd.Series) -> str:
    """The most common true label (ties: the later label, as the adequacy gate's baseline)."""
    vc = truth.astype(str).value_counts()
    return max(vc.index[vc == vc.iloc[0]])


def legalbench(data: pd.DataFrame, items) -> OwnSection:
    """Per model and answer set (of at least :data:`MIN_SET` of the model's items): accuracy
    without the task definition, always giving the most common true label of those items, and
    the share of the model's replies that are that label."""
    from metacog.hypotheses.answer_sets import answer_sets

    q = ("The prompt names the labels, so a model can score by always giving one: does any model do better "
         "than always answering the most common label of its items?")
    sets = answer_sets(list(items or [])).dropna(subset=["answer_set", "truth"])
    d = attempts(data).merge(sets[["item_id", "answer_set", "truth"]], on="item_id")
    d = d[d.groupby(["model", "answer_set"])["item_id"].transform("size") >= MIN_SET]
    if not len(d):
        return OwnSection(None, f"No answer set has {MIN_SET} or more graded items of one model, so no "
                                "label is a bar of its own.", q)
    rows = []
    for (m, s), g in d.groupby(["model", "answer_set"], sort=True):
        top = _top_label(g["truth"])
        said = pd.Series([float(_said(x) == _norm(top)) for x in g["decision"]], index=g.index)
        for what, hit in (("model's answers", g["correct"].astype(float)), ("always the most common label",
                          (g["truth"].astype(str) == top).astype(float)), ("replies giving that label", said)):
            rows.append({"model": short_model(m), "answer_set": s, "majority_label": top, "measure": what,
                         **rate_row(hit.sum(), len(g))})
    t = pd.DataFrame(rows)
    lines, above = [], []
    for m, gm in t.groupby("model", sort=False):
        parts = []
        for s, g in gm.groupby("answer_set", sort=False):
            r = g.set_index("measure")
            own, bar, says = (r.loc["model's answers"], r.loc["always the most common label"],
                              r.loc["replies giving that label"])
            top = own["majority_label"]
            side = ("above" if own["ci_low"] > bar["rate"] else "below" if own["ci_high"] < bar["rate"]
                    else "not distinguishable from")
            if side == "above":
                above.append(f"{m} ({s})")
            said = f"giving {top} {phrasing.plural(says['k'], 'time')}" if says["k"] else f"never giving {top}"
            parts.append(f"on {rate_text(own, s.replace(', ', '/') + ' item')}, {side} always answering {top} "
                         f"({fmt_num(bar['rate'])}), {said}")
        lines.append(f"{m} is right " + "; and ".join(parts))
    n_sets = len(set(zip(t["model"], t["answer_set"])))
    end = (f"Only {phrasing.join(above)} {phrasing.verb(len(above), 'does', 'do')} better than the most common label."
           if above else f"On none of the {phrasing.plural(n_sets, 'model-and-answer-set pair')} does a model do "
           "better than always giving the most common label.")
    return OwnSection(t, ". ".join(lines) + ". " + end + f" Answer sets with fewer than {MIN_SET} of a model's "
                      "items are left out.", q)


# --------------------------------------------------------------------------- MATH

def reply_cap(row, max_tokens: int | None = None) -> int:
    """The token cap a reply was asked with: the run's ``max_tokens``, else its template's."""
    from metacog.elicit import prompts

    if max_tokens:
        return int(max_tokens)
    tag = row.get("template_version") if isinstance(row.get("template_version"), str) else row["probe"]
    return prompts.get(tag).max_tokens


def cut_at_cap(d: pd.DataFrame, max_tokens: int | None = None) -> tuple[pd.Series, pd.Series]:
    """(cut, cap) for each attempt of ``d``: the cap it was asked with (:func:`reply_cap`) and
    whether its reply wrote that many tokens (the recording keeps no finish reason). No attempt
    is cut when the recording keeps no token counts."""
    cap = pd.Series([reply_cap(r, max_tokens) for r in d.to_dict("records")], index=d.index)
    if "completion_tokens" not in d:
        return pd.Series(False, index=d.index), cap
    return d["completion_tokens"].astype(float) >= cap, cap


#: What the MATH table counts, per model and design.
CUT_MEASURES = ("cut at the cap", "right among replies not cut", "right among replies cut")


def math(data: pd.DataFrame, items=None, max_tokens: int | None = None) -> OwnSection:
    """Per design and model: the share of replies cut at the cap (as many tokens written as the cap
    allows; the recording keeps no finish reason), and accuracy among the replies not cut and cut."""
    q = ("Replies are capped at a fixed number of tokens: how many are cut at the cap, and how often are "
         "the replies that finish right?")
    d = attempts(data, DESIGNS)
    if not len(d) or "completion_tokens" not in d or d["completion_tokens"].isna().all():
        return OwnSection(None, "The recording keeps no token counts, so replies cut at the cap cannot be told.", q)
    cut, cap = cut_at_cap(d, max_tokens)
    d = d.assign(cut=cut, cap=cap, design=d["probe"].map(DESIGNS))
    rows = []
    for (m, des), g in d.groupby(["model", "design"], sort=True):
        right = g["correct"].astype(float)
        for what, hit, among in zip(CUT_MEASURES, (g["cut"], right, right), (g["cut"] | True, ~g["cut"], g["cut"])):
            rows.append({"model": short_model(m), "design": des, "cap": int(g["cap"].max()), "measure": what,
                         **rate_row(hit[among].astype(float).sum(), int(among.sum()))})
    t = pd.DataFrame(rows)
    lines = []
    for (m, des), g in t.groupby(["model", "design"], sort=False):
        r = g.set_index("measure")
        ok = r.loc[CUT_MEASURES[1]]
        lines.append(f"{m} {des} the solution has {rate_text(r.loc[CUT_MEASURES[0]], 'reply', 'replies')} cut, and "
                     + (f"is right on {rate_text(ok)} of the rest" if ok["n"] else "none left to grade"))
    cut = t[t["measure"] == CUT_MEASURES[2]]
    pooled = rate_row(cut["k"].sum(), cut["n"].sum())
    caps = phrasing.join(map(str, sorted(t["cap"].unique())), conj="or")
    return OwnSection(t, f"At a cap of {caps} tokens, " + "; ".join(lines) + ". Of all the cut replies, "
                      f"{rate_text(pooled)} are right: the grader reads only what a cut reply wrote before the cap, so "
                      "a model that would have reached the answer is graded wrong, and the cap bounds both accuracies, "
                      "and the gain between them, that the page can measure.", q)


# --------------------------------------------------------------------------- Omni-MATH

def band(rating) -> str | None:
    """The :data:`BANDS` label of an Omni-MATH difficulty rating (None when it has none)."""
    if rating is None or pd.isna(rating):
        return None
    r = float(rating)
    return BANDS[0] if r < 4 else BANDS[1] if r <= 5 else BANDS[2]


def omni(data: pd.DataFrame, items) -> OwnSection:
    """Accuracy with and without the solution by difficulty band, per model."""
    q = ("Omni-MATH rates each problem's difficulty: does accuracy with and without the worked solution "
         "fall as the rating rises?")
    rating = {i: (it.meta or {}).get("difficulty") for i, it in by_item(items).items()}
    d = attempts(data, DESIGNS)
    d = d.assign(band=d["item_id"].astype(str).map(lambda i: band(rating.get(i))), design=d["probe"].map(DESIGNS))
    d = d.dropna(subset=["band"])
    if not len(d):
        return OwnSection(None, "No graded attempt has a difficulty rating, so there are no bands to compare.", q)
    order = list(BANDS)
    t = rate_table(d, ["model", "design", "band"])
    t = (t.assign(_o=t["band"].map(order.index)).sort_values(["model", "design", "_o"])
         .drop(columns="_o").reset_index(drop=True))
    differ = []
    for (m, des), g in t.groupby(["model", "design"], sort=False):
        g = g.set_index("band")
        if len(g) > 1 and apart(g.iloc[0], g.iloc[-1]):
            differ.append(f"{m} {des} the solution ({'lower' if apart(g.iloc[0], g.iloc[-1]) > 0 else 'higher'} "
                         "in the hardest band)")
    n = d.drop_duplicates("item_id")["band"].value_counts()
    sizes = phrasing.join(f"{phrasing.plural(int(n[b]), 'item')} rated {b}" for b in order if b in n.index)
    end = (f"The easiest and hardest bands' intervals lie apart for {phrasing.join(differ)}." if differ else
           "For no model and design do the easiest and hardest bands' intervals lie apart: with "
           f"{phrasing.plural(int(n.min()), 'item')} in the smallest band, this run cannot tell whether accuracy "
           "falls as the rating rises.")
    return OwnSection(t, f"The table gives each model's accuracy per band ({sizes}), with and without the "
                         f"solution. " + end, q)


# --------------------------------------------------------------------------- SciCode

def code_parses(reply, function_header: str = "") -> bool:
    """Does the code the grader would run (:func:`metacog.benchmarks.scicode.extract_code`) parse?"""
    from metacog.benchmarks.scicode import extract_code

    try:
        ast.parse(extract_code(str(reply or ""), function_header))
    except (SyntaxError, ValueError):
        return False
    return True


#: SciCode outcomes, in the order the table gives them.
OUTCOMES = ("code does not parse", "parses, fails the tests", "passes the tests")
WORDS = dict(zip(OUTCOMES, ("code that does not parse", "code that parses and fails the tests",
                            "code that passes")))


def scicode(data: pd.DataFrame, items, max_tokens: int | None = None) -> OwnSection:
    """Per design and model: shares of attempts whose code does not parse, parses and fails the
    step's tests, or passes them (each with its interval), and how many of each were cut at the
    token cap (``max_tokens``: the run's, else each template's)."""
    q = ("Grading runs the code in a sandbox: does an attempt fail because its code does not parse, or "
         "because it runs and fails the step's tests?")
    its = by_item(items)
    d = attempts(data, DESIGNS)
    if not len(d):
        return OwnSection(None, "No attempt was graded, so there are no outcomes to count.", q)
    head = [(its[str(i)].meta or {}).get("function_header", "") if str(i) in its else "" for i in d["item_id"]]
    parses = [code_parses(r, h) for r, h in zip(d["raw_text"], head)]
    outcome = np.where(d["correct"].astype(float) > 0, OUTCOMES[2], np.where(parses, OUTCOMES[1], OUTCOMES[0]))
    cut, cap = cut_at_cap(d, max_tokens)
    d = d.assign(outcome=outcome, design=d["probe"].map(DESIGNS), cut=cut)
    rows = [{"model": short_model(m), "design": des, "outcome": o, **rate_row((g["outcome"] == o).sum(), len(g)),
             "cut_at_cap": int((g["cut"] & (g["outcome"] == o)).sum())}
            for (m, des), g in d.groupby(["model", "design"], sort=True) for o in OUTCOMES]
    t = pd.DataFrame(rows)
    pooled = {o: rate_row((d["outcome"] == o).sum(), len(d)) for o in OUTCOMES}
    lines = ["Pooled over models and designs (the table gives each), the attempts write " + phrasing.join(
        f"{WORDS[o]} in {rate_text(pooled[o], 'attempt') if i == 0 else rate_text(pooled[o])}"
        for i, o in enumerate(OUTCOMES))]
    bad = d[d["outcome"] == OUTCOMES[0]]
    cut = rate_row(bad["cut"].sum(), len(bad))
    caps = phrasing.join(map(str, sorted(set(cap))), conj="or")
    end = (f" Of the attempts whose code does not parse, {rate_text(cut)} stop at the {caps}-token cap, "
           "cut off before the code is complete." if len(bad) else "")
    return OwnSection(t, "; ".join(lines) + "." + end, q)


# --------------------------------------------------------------------------- dispatch

ANALYSES = {"squad": squad, "mmlu_pro": mmlu_pro, "legalbench": legalbench, "math": math, "omni_math": omni,
            "scicode": scicode}
#: Run names that differ from their benchmark's.
ALIASES = {"omni": "omni_math", "mmlu": "mmlu_pro"}


def own_section(data: pd.DataFrame, items, benchmark: str, *, page=None, max_tokens: int | None = None,
                min_conformance: float = 0.8) -> OwnSection:
    """The page's own section for ``benchmark`` (``page``: the page's
    :class:`~metacog.pages.benchmark.compare.PageResults`, whose gain verdicts MMLU-Pro reuses;
    ``max_tokens``: the run's cap, else each template's). A benchmark with no analysis here gets a
    section saying so."""
    name = ALIASES.get(str(benchmark), str(benchmark))
    if name not in ANALYSES:
        return OwnSection(None, f"This run's benchmark, {benchmark}, has no benchmark-specific analysis in the "
                                f"book (those are: {phrasing.join(sorted(ANALYSES))}); every other section of "
                                "the page applies to it as it stands.",
                          "What does this benchmark ask that the others do not? The book has no analysis for it yet.")
    if name == "mmlu_pro":
        return mmlu_pro(data, items, page=page, min_conformance=min_conformance)
    if name in ("math", "scicode"):
        return ANALYSES[name](data, items, max_tokens=max_tokens)
    return ANALYSES[name](data, items)
