"""Detect inline solving in confidence reasoning text (paper 1's "symbolic shortcut").

Asked "could you answer this?", a reasoning model often just solves the problem
inside its confidence reasoning: equations, step-by-step computation, "let me
compute". Its confidence then reports whether its own worked solution looks
right, not subsymbolic self-knowledge. :func:`detect_inline_solving` flags such
texts with transparent regular-expression cues, each with a weight; a text is
flagged when the summed weight of the cues that fire reaches ``threshold``.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path
from collections.abc import Iterable

import numpy as np
import pandas as pd

_NUM = r"(?:\d+(?:[.,]\d+)?|[a-z])"
_OP = r"(?:[+\-*/×÷^·]|\\times|\\cdot|\\div)"

#: cue name -> (pattern, weight, what it catches). Patterns are case-insensitive.
CUES: dict[str, tuple[str, float, str]] = {
    "equation": (rf"{_NUM}\s*{_OP}\s*{_NUM}(?:\s*{_OP}\s*{_NUM})*\s*=\s*-?{_NUM}", 2.0,
                 "an arithmetic or algebraic expression with a result: '3 * 4 = 12', 'x + 2 = 5'"),
    "equals_chain": (r"=[^=\n]{1,40}=", 1.5, "two '=' in a row: 'a = b = c' chains of derivation"),
    "assignment": (r"\b[a-z](?:_\w+)?\s*=\s*-?\d", 1.0, "a variable set to a number: 'x = 3'"),
    "latex": (r"\\(?:frac|sqrt|sum|int|cdot|times|binom|pi|theta|alpha|le|ge|neq|pmod|equiv|left|right)(?![a-z])"
              r"|\$[^$\n]{1,200}\$|\\\(|\\\[|\^\{", 1.5, "LaTeX math: \\frac, \\sqrt, $...$, \\( \\)"),
    "math_notation": (r"[a-z0-9)]\^-?\d|\b\d+/\d+\b(?!/)|\bmod\b|\bdx\b|√", 1.0,
                      "powers, fractions and other math notation: 'x^2', '3/28', 'mod'"),
    "compute_phrase": (r"\blet(?:'s| me| us)\s+(?:compute|calculate|solve|work (?:it |this )?out|"
                       r"evaluate|simplify|check|verify|find|try|plug|substitute|set up|expand|factor|"
                       r"differentiate|integrate|count|think step)", 2.0,
                       "announcing work: 'let me compute', 'let's solve'"),
    "derivation_verb": (r"\b(?:substitut\w*|plugging in|simplif\w*|solving for|rearrang\w*|"
                        r"factori[sz]\w*|differentiat\w*|integrat\w+ (?:by|over|from)|expand\w* (?:the|this)|"
                        r"multiply\w* (?:both|by)|divid\w* (?:both|by)|we get|we obtain|this gives|"
                        r"which gives|yields)\b", 1.0, "derivation vocabulary: 'substituting', 'we get'"),
    "step_marker": (r"\bstep\s*\d+\b|\bfirst,[^.]{0,80}\bthen\b", 1.0, "'Step 1', 'first ... then'"),
    "numbered_steps": (r"(?m)(?:^\s*\d+[.)]\s+\S.*\n){1,}^\s*\d+[.)]\s+\S", 1.0,
                       "two or more numbered lines"),
    "implication": (r"=>|⇒|\\implies|\\Rightarrow|\btherefore\s+[a-z0-9(]+\s*[=<>]|\bso\s+[a-z]\s*[=<>]", 1.0,
                    "'=>', 'therefore x = ...'"),
    "math_result": (r"\b(?:the answer is|answer:|result is|equals|comes out to|gives us)\s*"
                    r"(?:\$|\\\(|-?\d|[a-z]\s*=)", 1.5, "stating a computed result: 'the answer is 42'"),
    "code": (r"```|\bdef \w+\(|\breturn\b [\w(]|\bimport (?:numpy|math|scipy)\b|\bfor \w+ in range\(", 1.5,
             "code written inline"),
}

_COMPILED = {name: re.compile(p, re.IGNORECASE) for name, (p, _, _) in CUES.items()}


def cue_table() -> pd.DataFrame:
    """The cues as a table (cue, weight, description), for the book."""
    return pd.DataFrame([(n, w, d) for n, (_, w, d) in CUES.items()],
                        columns=["cue", "weight", "description"])


def _to_list(texts) -> list[str]:
    if isinstance(texts, str):
        raise ValueError("detect_inline_solving: texts must be a list/Series of strings, not one string; "
                         "wrap it: [text].")
    if not isinstance(texts, Iterable):
        raise ValueError(f"detect_inline_solving: texts must be an iterable of strings, got {type(texts).__name__}.")
    out = []
    for t in texts:
        if t is None or (isinstance(t, float) and np.isnan(t)) or t is pd.NA:
            out.append("")
        elif isinstance(t, str):
            out.append(t)
        else:
            raise ValueError(f"detect_inline_solving: every text must be a string or missing; got "
                             f"{type(t).__name__} {t!r}.")
    return out


def detect_inline_solving(texts, threshold: float = 2.0, detail: bool = False) -> pd.DataFrame:
    """Flag texts that solve the problem inline.

    Returns one row per text (same index as a given Series): ``inline_solving``
    (bool, score >= threshold), ``score`` (sum of the weights of the cues that
    fired, each cue counted once), ``n_cues`` and ``cues`` (comma-joined names).
    With ``detail=True`` also one count column per cue (``cue_<name>``).
    Missing texts count as empty (score 0).
    """
    index = texts.index if isinstance(texts, pd.Series) else None
    items = _to_list(texts)
    rows = []
    for text in items:
        counts = {n: len(rx.findall(text)) for n, rx in _COMPILED.items()}
        fired = [n for n, c in counts.items() if c > 0]
        score = float(sum(CUES[n][1] for n in fired))
        row = {"inline_solving": score >= threshold, "score": score, "n_cues": len(fired),
               "cues": ",".join(fired)}
        if detail:
            row.update({f"cue_{n}": c for n, c in counts.items()})
        rows.append(row)
    cols = ["inline_solving", "score", "n_cues", "cues"] + ([f"cue_{n}" for n in CUES] if detail else [])
    df = pd.DataFrame(rows, columns=cols, index=index)
    df["inline_solving"] = df["inline_solving"].astype(bool)
    df["score"] = df["score"].astype(float)
    df["n_cues"] = df["n_cues"].astype(int)
    return df


# ---------------------------------------------------------------------------
# Pairwise calibration by pair type and item group (reasoning vs non-reasoning models)

def pair_type(judge_reasoning: bool, target_reasoning: bool) -> str:
    """'R-R', 'R-N', 'N-R' or 'N-N': judge first, target second (R = reasoning model)."""
    return f"{'R' if judge_reasoning else 'N'}-{'R' if target_reasoning else 'N'}"


def label_pairs(pairs: pd.DataFrame, reasoning) -> pd.DataFrame:
    """Add ``judge_reasoning``, ``target_reasoning`` and ``pair_type`` to a pairs table.

    ``pairs`` has ``judge`` and ``target`` columns (as
    :attr:`metacog.stats.PairwiseResult.pairs`); ``reasoning`` maps every model to a
    bool. A model missing from ``reasoning`` raises a ValueError naming it.
    """
    reasoning = pd.Series(reasoning, dtype=object)
    missing = sorted(set(pairs["judge"]).union(pairs["target"]) - set(reasoning.index))
    if missing:
        raise ValueError(f"label_pairs: no reasoning flag for model(s) {missing}; add them to the "
                         f"metadata table (metacog.data.model_metadata) or pass a mapping that covers them.")
    out = pairs.copy()
    out["judge_reasoning"] = out["judge"].map(reasoning).astype(bool)
    out["target_reasoning"] = out["target"].map(reasoning).astype(bool)
    out["pair_type"] = [pair_type(j, t) for j, t in zip(out["judge_reasoning"], out["target_reasoning"])]
    return out


def calibration_by_group(confidence: pd.DataFrame, correct: pd.DataFrame, groups, reasoning, *,
                         min_items: int = 5, **kwargs) -> pd.DataFrame:
    """Pairwise calibration within each item group, every pair labelled by reasoning type.

    ``groups`` maps item ids (the index of both matrices) to a group such as the
    domain. Returns the tidy pairs table of :func:`metacog.stats.pairwise_calibration`
    for each group, stacked, with ``group`` and the columns of :func:`label_pairs`.
    Groups with fewer than ``min_items`` items are skipped. Extra keyword
    arguments go to ``pairwise_calibration``.
    """
    from metacog import stats
    groups = pd.Series(groups).reindex(confidence.index)
    if groups.isna().any():
        item = groups.index[groups.isna().to_numpy()][0]
        raise ValueError(f"calibration_by_group: item {item!r} has no group; every row of the "
                         f"matrices needs one.")
    frames = []
    for name, items in groups.groupby(groups, observed=True).groups.items():
        if len(items) < min_items:
            continue
        res = stats.pairwise_calibration(confidence.loc[items], correct.loc[items], **kwargs)
        frames.append(label_pairs(res.pairs, reasoning).assign(group=name, n_group_items=len(items)))
    if not frames:
        raise ValueError(f"calibration_by_group: no group has {min_items} or more items.")
    return pd.concat(frames, ignore_index=True)


def summarise_pair_types(pairs: pd.DataFrame, value: str = "tau", by=("group",)) -> pd.DataFrame:
    """Mean and count of ``value`` per pair type (and per ``by`` columns), self-pairs apart."""
    P = pairs.assign(kind=np.where(pairs["self"], "self", "other"))
    keys = [*by, "pair_type", "kind"]
    return (P.groupby(keys, observed=True)[value].agg(["mean", "count"])
            .rename(columns={"mean": f"mean_{value}", "count": "n_pairs"}).reset_index())


def self_advantage(pairs: pd.DataFrame, value: str = "tau", by=("group",)) -> pd.DataFrame:
    """Per judge (and ``by`` group): its self-pair ``value`` minus its mean over other targets.

    Positive means the judge's confidence tracks its own correctness better than
    other models' correctness: the individualised part of its calibration.
    """
    keys = [*by, "judge"]
    own = pairs[pairs["self"]].set_index(keys)[value]
    others = pairs[~pairs["self"]].groupby(keys, observed=True)[value].mean()
    out = pd.DataFrame({"self": own, "other": others})
    out["advantage"] = out["self"] - out["other"]
    extra = [c for c in ("judge_reasoning",) if c in pairs]
    if extra:
        out = out.join(pairs[pairs["self"]].set_index(keys)[extra])
    return out.reset_index()


# ---------------------------------------------------------------------------
# Checking the detector against hand labels

#: The committed hand labels (rule and labeller in the file's header), shipped as package data.
LABELS = Path(str(resources.files("metacog").joinpath("data_files", "shortcut_inline_labels.csv")))
_KEYS = ["run", "model", "item_id", "probe", "sample"]


def hand_labels(path=None, responses=None) -> pd.DataFrame:
    """The hand-labelled sample with its texts: run, model, item_id, probe, sample, solves_inline
    (0/1), why, text.

    Texts are read from ``responses`` (default ``data/responses``), ``<run>.parquet``, and checked
    against the file's ``text_sha1``; a missing file, row or changed text raises a ValueError
    naming it (1-based line of the labels file).
    """
    import hashlib

    path = Path(path or LABELS)
    if responses is None:
        from metacog.settings import data_dir

        responses = data_dir() / "responses"
    responses = Path(responses)
    if not path.exists():
        raise ValueError(f"hand_labels: {path} does not exist; the labels ship with the repository's tests.")
    labels = pd.read_csv(path, comment="#", dtype={"item_id": str})
    missing = [c for c in [*_KEYS, "solves_inline", "text_sha1"] if c not in labels]
    if missing:
        raise ValueError(f"hand_labels: {path} lacks column(s) {missing}.")
    bad = ~labels["solves_inline"].isin([0, 1])
    if bad.any():
        raise ValueError(f"hand_labels: {path}: solves_inline must be 0 or 1; data row "
                         f"{int(np.flatnonzero(bad)[0]) + 1} has {labels['solves_inline'][bad].iloc[0]!r}.")
    texts = []
    for i, r in enumerate(labels.itertuples(index=False)):
        src = responses / f"{r.run}.parquet"
        if not src.exists():
            raise ValueError(f"hand_labels: data row {i + 1} of {path.name} names run {r.run!r}, but {src} "
                             "does not exist.")
        d = _recorded(src)
        hit = d[(d["model"] == r.model) & (d["item_id"].astype(str) == r.item_id) & (d["probe"] == r.probe)
                & (d["sample"] == r.sample)]
        if hit.empty:
            raise ValueError(f"hand_labels: data row {i + 1} of {path.name} ({r.run}, {r.model}, {r.item_id}, "
                             f"{r.probe}, sample {r.sample}) is not in {src.name}.")
        text = str(hit["reasoning_text"].iloc[0])
        if hashlib.sha1(text.encode()).hexdigest()[:12] != r.text_sha1:
            raise ValueError(f"hand_labels: the text of data row {i + 1} of {path.name} changed since it was "
                             "labelled (run re-recorded?); label the new text again.")
        texts.append(text)
    return labels.assign(text=texts)


_CACHE: dict = {}


def _recorded(src: Path) -> pd.DataFrame:
    key = (str(src), src.stat().st_mtime)
    if key not in _CACHE:
        _CACHE[key] = pd.read_parquet(src, columns=["model", "item_id", "probe", "sample", "reasoning_text"])
    return _CACHE[key]


def cohen_kappa(a, b) -> float:
    """Cohen's kappa of two 0/1 raters; NaN when chance agreement is 1 (both constant alike)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    po = float(np.mean(a == b))
    pa, pb = a.mean(), b.mean()
    pe = pa * pb + (1 - pa) * (1 - pb)
    return np.nan if pe >= 1 else (po - pe) / (1 - pe)


def added_flags_sentence(truth, lower: pd.DataFrame, higher: pd.DataFrame, threshold: float) -> str:
    """What a lower detector threshold adds: the texts ``lower`` flags and ``higher`` does not
    (both :func:`detect_inline_solving` on the same texts), counted by the hand label ``truth``
    (1 = solves inline), with the cues that fired on them, e.g. 'Threshold 1 adds 9 flagged
    texts: 1 we labelled "yes" (cues: numbered_steps on 1) and 8 we labelled "no" (cues: ...).'"""
    from collections import Counter

    from metacog.tidy.phrasing import plural

    added = (lower["inline_solving"].to_numpy(dtype=bool) & ~higher["inline_solving"].to_numpy(dtype=bool))
    truth = np.asarray(truth, dtype=float)
    if not added.any():
        return f"Threshold {threshold:g} flags no text that the default threshold does not."

    def by_label(value, word):
        keep = added & (truth == value)
        cues = Counter(c for t in lower["cues"].to_numpy()[keep] for c in str(t).split(",") if c)
        fired = ", ".join(f"{c} on {k}" for c, k in cues.most_common())
        return f"{int(keep.sum())} we labelled \"{word}\"" + (f" (cues: {fired})" if keep.any() else "")

    return (f"Threshold {threshold:g} adds {plural(int(added.sum()), 'flagged text')}: "
            f"{by_label(1, 'yes')} and {by_label(0, 'no')}.")


def agreement(truth, predicted, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """How well ``predicted`` (0/1, the detector) agrees with ``truth`` (0/1, hand labels).

    One row per statistic: accuracy, Cohen's kappa, sensitivity (share of hand-labelled
    inline texts flagged) and specificity, with estimate, ci_low, ci_high, n (texts the
    statistic rests on) and method (exact Clopper-Pearson for the proportions, a percentile
    bootstrap over texts for kappa).
    """
    from metacog.stats.intervals import proportion_ci

    t, p = np.asarray(truth, int), np.asarray(predicted, int)
    if t.shape != p.shape or t.ndim != 1 or not len(t):
        raise ValueError(f"agreement: truth and predicted must be equal-length 1-d 0/1 arrays, "
                         f"got shapes {t.shape} and {p.shape}.")
    if not (np.isin(t, (0, 1)).all() and np.isin(p, (0, 1)).all()):
        raise ValueError("agreement: truth and predicted must hold only 0 and 1.")
    rows = []
    for name, k, n in (("accuracy", int((t == p).sum()), len(t)),
                       ("sensitivity", int(((t == 1) & (p == 1)).sum()), int((t == 1).sum())),
                       ("specificity", int(((t == 0) & (p == 0)).sum()), int((t == 0).sum()))):
        lo, hi = proportion_ci(k, n, method="exact") if n else (np.nan, np.nan)
        rows.append({"statistic": name, "estimate": k / n if n else np.nan, "ci_low": lo, "ci_high": hi,
                     "n": n, "method": "exact (Clopper–Pearson)"})
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(t), (n_boot, len(t)))
    boots = np.array([cohen_kappa(t[i], p[i]) for i in idx])
    boots = boots[np.isfinite(boots)]
    lo, hi = np.quantile(boots, [0.025, 0.975]) if boots.size >= 10 else (np.nan, np.nan)
    rows.insert(1, {"statistic": "Cohen's kappa", "estimate": cohen_kappa(t, p), "ci_low": float(lo),
                    "ci_high": float(hi), "n": len(t), "method": f"percentile bootstrap over texts ({n_boot})"})
    return pd.DataFrame(rows, columns=["statistic", "estimate", "ci_low", "ci_high", "n", "method"])


def inline_rates(panelset, threshold: float = 2.0) -> tuple[pd.DataFrame, list[str]]:
    """The detector on every panel's recorded reasoning texts.

    Returns (table, sentences): one row per panel and model with texts, flagged, share and its
    Wilson 95% interval; and one sentence per panel that has no reasoning text to run on.
    """
    from metacog.stats.intervals import proportion_ci

    rows, missing = [], []
    for p in panelset:
        t = p.table
        texts = t["reasoning_text"] if "reasoning_text" in t else pd.Series(dtype=object)
        keep = texts.notna() & (texts.astype(str).str.strip() != "")
        if not keep.any():
            missing.append(f"{p.name} has no recorded reasoning text, so the detector cannot run on it.")
            continue
        flags = detect_inline_solving(texts[keep].astype(str), threshold=threshold)["inline_solving"]
        for model, f in flags.groupby(t.loc[keep, "model"].to_numpy()):
            lo, hi = proportion_ci(int(f.sum()), len(f))
            rows.append({"panel": p.name, "model": model, "texts": len(f), "flagged": int(f.sum()),
                         "share": float(f.mean()), "share_ci_low": lo, "share_ci_high": hi})
    cols = ["panel", "model", "texts", "flagged", "share", "share_ci_low", "share_ci_high"]
    return pd.DataFrame(rows, columns=cols), missing
