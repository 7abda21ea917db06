"""Reasoning-text probe (paper 1): can surface features of the confidence reasoning predict correctness?

Paper 1 fits a plain logistic regression on hand-crafted features of the text a
model writes while judging its own confidence, and finds that on some
benchmarks it ranks correct above wrong answers better than the model's own
yes/no. This module gives the features (:func:`features`), the estimator
(:class:`ReasoningTextProbe`, cross-validated out-of-fold probabilities and
AUROC), the paired comparison with the model's binary judgment
(:func:`compare_auroc`), and the repeated-sampling baseline: the AUROC of the
mean of ``k`` sampled binary judgments (:func:`sample_mean_auroc`).

The features deliberately leave out the final decision words ("yes"/"no") so the
probe reads the reasoning, not the verdict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from itertools import combinations

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from metacog.hypotheses.shortcut.detect import detect_inline_solving
from metacog.stats import auroc


def _phrases(words: list[str]) -> re.Pattern:
    alts = "|".join(sorted((re.escape(w).replace(r"\ ", r"\s+") for w in words), key=len, reverse=True))
    return re.compile(rf"(?<![\w'])(?:{alts})(?![\w])", re.IGNORECASE)


#: feature name -> phrase list (counted as case-insensitive whole-word matches)
LEXICONS: dict[str, list[str]] = {
    "hedges": ["might", "may", "maybe", "perhaps", "possibly", "probably", "likely", "unlikely",
               "not sure", "unsure", "uncertain", "i think", "i believe", "i guess", "it seems",
               "seems", "could be", "not certain", "not confident", "doubt", "roughly",
               "approximately", "i suspect", "presumably", "if i recall correctly"],
    "certainty": ["definitely", "certainly", "clearly", "confident", "confidently", "well-known",
                  "well known", "obviously", "undoubtedly", "of course", "for sure", "no doubt",
                  "absolutely", "i am sure", "i'm sure", "pretty sure", "quite sure", "without a doubt", "widely known", "famous", "established"],
    "recall": ["i recall", "i remember", "as i know", "i know", "i've seen", "i have seen",
               "from memory", "i'm aware", "i am aware", "i'm familiar", "i am familiar",
               "my training", "my knowledge", "i learned", "i've read", "i have read"],
    "unfamiliar": ["not familiar", "unfamiliar", "don't know", "do not know", "don't recall",
                   "do not recall", "can't recall", "cannot recall", "can't remember", "no knowledge",
                   "not aware", "never heard", "no information", "lack", "not sure what"],
    "difficulty": ["difficult", "hard", "complex", "complicated", "tricky", "obscure", "niche",
                   "specialized", "specialised", "specific", "detailed", "advanced", "nuanced",
                   "ambiguous", "challenging", "rare"],
    "ease": ["easy", "simple", "basic", "common", "commonly", "elementary", "trivial",
             "straightforward", "standard", "fundamental", "general knowledge", "textbook"],
    "context_refs": ["passage", "context", "hint", "hints", "options", "choices", "definition",
                     "the text", "the article", "background", "without the", "provided"],
    "negations": ["not", "no", "never", "cannot", "can't", "don't", "doesn't", "won't",
                  "isn't", "wasn't", "without", "neither", "nor"],
    "restatement": ["the question asks", "the question is", "the question is asking", "asks about",
                    "asks for", "asks whether", "is asking", "this question", "the problem asks",
                    "the task is", "we are asked", "i am asked", "i'm asked"],
    "first_person": ["i", "me", "my", "myself", "i'm", "i've", "i'd", "i'll"],
}
_LEX = {name: _phrases(words) for name, words in LEXICONS.items()}
_WORD = re.compile(r"[A-Za-z0-9']+")
_SENT = re.compile(r"[.!?]+(?:\s|$)")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_OPERATOR = re.compile(r"(?<=[\w)\s])[+*/×÷=^](?=[\s\w(])|(?<=[\d)\s])-(?=[\s\d(])")
_TOKEN = re.compile(r"[a-z0-9]+")

#: Every feature column, in order.
FEATURES = (["n_chars", "n_words", "n_sentences", "mean_word_len"] + list(LEXICONS)
            + ["numbers", "operators", "equals", "question_marks", "inline_score", "question_overlap"])

_STOP = set("the a an of to in on for and or is are was were be by with as at from that this it "
            "what which who whom how why when where does do did can could would you your".split())


def _texts(texts, name: str = "texts") -> list[str]:
    if isinstance(texts, str):
        raise ValueError(f"{name} must be a list/Series of strings, not one string; wrap it: [text].")
    if not isinstance(texts, Iterable):
        raise ValueError(f"{name} must be an iterable of strings, got {type(texts).__name__}.")
    out = []
    for t in texts:
        if t is None or t is pd.NA or (isinstance(t, float) and math.isnan(t)):
            out.append("")
        elif isinstance(t, str):
            out.append(t)
        else:
            raise ValueError(f"{name}: every entry must be a string or missing; got {type(t).__name__} {t!r}.")
    return out


def _overlap(text: str, question: str) -> float:
    q = {w for w in _TOKEN.findall(question.lower()) if w not in _STOP}
    if not q:
        return 0.0
    t = set(_TOKEN.findall(text.lower()))
    return len(q & t) / len(q)


def features(texts, questions=None) -> pd.DataFrame:
    """Hand-crafted surface features of confidence reasoning texts, one row per text.

    Lengths (``n_chars``, ``n_words``, ``n_sentences``, ``mean_word_len``), counts of
    each lexicon in :data:`LEXICONS` (hedges, certainty markers, recall phrases,
    unfamiliarity, difficulty and ease words, references to the hidden context,
    negations, question restatement, first person), ``numbers`` (digit runs),
    ``operators`` and ``equals`` (inline computation), ``question_marks``,
    ``inline_score`` (the :mod:`metacog.hypotheses.shortcut.detect` inline-solving score) and
    ``question_overlap`` (share of the question's content words repeated in the
    text; 0 when ``questions`` is not given). Missing texts count as empty.
    """
    index = texts.index if isinstance(texts, pd.Series) else None
    items = _texts(texts)
    if questions is None:
        qs = [""] * len(items)
    else:
        qs = _texts(questions, "questions")
        if len(qs) != len(items):
            raise ValueError(f"features: questions has {len(qs)} entries but texts has {len(items)}; "
                             "give one question per text.")
    rows = []
    for text, q in zip(items, qs):
        words = _WORD.findall(text)
        row = {
            "n_chars": len(text),
            "n_words": len(words),
            "n_sentences": len(_SENT.findall(text)) + (1 if text.strip() and text.strip()[-1] not in ".!?" else 0),
            "mean_word_len": float(np.mean([len(w) for w in words])) if words else 0.0,
        }
        for name, rx in _LEX.items():
            row[name] = len(rx.findall(text))
        row["numbers"] = len(_NUMBER.findall(text))
        row["operators"] = len(_OPERATOR.findall(text))
        row["equals"] = text.count("=")
        row["question_marks"] = text.count("?")
        row["question_overlap"] = _overlap(text, q)
        rows.append(row)
    df = pd.DataFrame(rows, columns=[c for c in FEATURES if c != "inline_score"], index=index)
    df["inline_score"] = detect_inline_solving(items)["score"].to_numpy()
    return df[FEATURES].astype(float)


def _binary(y, name: str) -> np.ndarray:
    arr = np.asarray(pd.Series(y, dtype="float64") if not isinstance(y, np.ndarray) else y, dtype=float).ravel()
    if np.isnan(arr).any():
        raise ValueError(f"{name} has missing values; drop those rows first.")
    if not np.isin(arr, (0.0, 1.0)).all():
        raise ValueError(f"{name} must be 0/1 (or booleans); found {sorted(set(arr) - {0.0, 1.0})[:5]}.")
    return arr


class ReasoningTextProbe:
    """Logistic regression on :func:`features`, scored out of fold.

    Settings: ``C`` (inverse L2 strength), ``cv`` (stratified folds), ``seed``.
    ``fit(texts, correct, questions=None)`` sets ``features_`` (the feature table),
    ``oof_proba_`` (out-of-fold P(correct) per text), ``auroc_`` (AUROC of
    ``oof_proba_``), ``pipeline_`` (refit on all rows) and ``coef_`` (standardised
    log1p-feature coefficients of the refit, a Series).
    """

    def __init__(self, C: float = 1.0, cv: int = 5, seed: int = 0):
        self.C = C
        self.cv = cv
        self.seed = seed

    def _pipeline(self):
        return make_pipeline(FunctionTransformer(np.log1p), StandardScaler(),
                             LogisticRegression(C=self.C, max_iter=2000))

    def fit(self, texts, correct, questions=None) -> "ReasoningTextProbe":
        if not (self.C > 0):
            raise ValueError(f"ReasoningTextProbe: C must be > 0, got {self.C!r}.")
        if int(self.cv) != self.cv or self.cv < 2:
            raise ValueError(f"ReasoningTextProbe: cv must be an integer >= 2, got {self.cv!r}.")
        X = features(texts, questions)
        y = _binary(correct, "correct")
        if len(y) != len(X):
            raise ValueError(f"ReasoningTextProbe.fit: {len(X)} texts but {len(y)} correct labels.")
        n_min = int(min((y == 1).sum(), (y == 0).sum()))
        if n_min < self.cv:
            raise ValueError(f"ReasoningTextProbe.fit: the rarer class has {n_min} rows, fewer than "
                             f"cv={self.cv} folds; lower cv or add data.")
        folds = StratifiedKFold(n_splits=int(self.cv), shuffle=True, random_state=self.seed)
        self.features_ = X
        self.y_ = y
        self.oof_proba_ = cross_val_predict(self._pipeline(), X.to_numpy(), y, cv=folds,
                                            method="predict_proba")[:, 1]
        self.auroc_ = auroc(y, self.oof_proba_)
        self.pipeline_ = self._pipeline().fit(X.to_numpy(), y)
        self.coef_ = pd.Series(self.pipeline_[-1].coef_[0], index=FEATURES, name="coef")
        return self

    def predict_proba(self, texts, questions=None) -> np.ndarray:
        """P(correct) for new texts from the refit model."""
        if not hasattr(self, "pipeline_"):
            raise ValueError("ReasoningTextProbe: call fit(texts, correct) before predict_proba.")
        return self.pipeline_.predict_proba(features(texts, questions).to_numpy())[:, 1]

    def compare(self, judgment, n_boot: int = 1000, seed: int | None = None) -> pd.DataFrame:
        """Compare ``auroc_`` with the AUROC of the model's own judgment on the same rows."""
        if not hasattr(self, "oof_proba_"):
            raise ValueError("ReasoningTextProbe: call fit(texts, correct) before compare.")
        return compare_auroc(self.y_, {"text_probe": self.oof_proba_, "judgment": judgment},
                             n_boot=n_boot, seed=self.seed if seed is None else seed)


def compare_auroc(correct, scores: dict, n_boot: int = 1000, seed: int = 0,
                  reference: str | None = None) -> pd.DataFrame:
    """AUROC of several scores on the same items, with a paired item bootstrap.

    ``scores`` maps a name to a score per item. Returns one row per score: auroc,
    bootstrap 95% interval, and the difference from the ``reference`` score (the
    last one by default, e.g. the model's own judgment) with its interval and the
    bootstrap share of resamples where the difference is <= 0 (a one-sided p-value).
    """
    y = _binary(correct, "correct")
    if len(scores) < 1:
        raise ValueError("compare_auroc: give at least one score.")
    S = {}
    for name, s in scores.items():
        arr = np.asarray(s, dtype=float).ravel()
        if arr.shape != y.shape:
            raise ValueError(f"compare_auroc: score {name!r} has {arr.size} values but correct has {y.size}.")
        if np.isnan(arr).any():
            raise ValueError(f"compare_auroc: score {name!r} has missing values.")
        S[name] = arr
    ref = reference if reference is not None else list(S)[-1]
    if ref not in S:
        raise ValueError(f"compare_auroc: reference {ref!r} is not one of {list(S)}.")
    point = {n: auroc(y, s) for n, s in S.items()}
    rng = np.random.default_rng(seed)
    n = len(y)
    boots = {name: [] for name in S}
    for _ in range(int(n_boot)):
        idx = rng.integers(0, n, n)
        yb = y[idx]
        if yb.min() == yb.max():
            continue
        for name, s in S.items():
            boots[name].append(auroc(yb, s[idx]))
    B = {k: np.asarray(v) for k, v in boots.items()}
    rows = []
    for name in S:
        diff = B[name] - B[ref] if n_boot else np.array([])
        has = diff.size > 0
        rows.append({
            "score": name, "auroc": point[name],
            "ci_low": float(np.quantile(B[name], 0.025)) if has else np.nan,
            "ci_high": float(np.quantile(B[name], 0.975)) if has else np.nan,
            "diff_vs_ref": point[name] - point[ref],
            "diff_ci_low": float(np.quantile(diff, 0.025)) if has else np.nan,
            "diff_ci_high": float(np.quantile(diff, 0.975)) if has else np.nan,
            "p_not_better": float(np.mean(diff <= 0)) if has and name != ref else np.nan,
        })
    out = pd.DataFrame(rows)
    out.attrs["reference"] = ref
    out.attrs["n_items"] = n
    return out


def sample_mean_auroc(correct, judgments, ks=None, n_draws: int = 200, seed: int = 0) -> pd.DataFrame:
    """AUROC of the mean of ``k`` repeated binary judgments, for each ``k``, for telling the
    ``correct`` answers (0/1, first, as everywhere in the book) from the wrong ones.

    ``judgments`` is items x samples (0/1; NaN allowed for a missing sample, the
    mean skips it). For each ``k`` in ``ks`` (default 1..n_samples), every subset of
    ``k`` sample columns (or ``n_draws`` random subsets when there are more) gives
    a score, the per-item mean; the table reports the mean and sd of the AUROC
    over subsets. This is the equal-information baseline: ``k`` yes/no calls.
    """
    J = np.asarray(judgments, dtype=float)
    if J.ndim != 2:
        raise ValueError(f"sample_mean_auroc: judgments must be items x samples (2-D), got {J.ndim}-D.")
    y = _binary(correct, "correct")
    if J.shape[0] != y.size:
        raise ValueError(f"sample_mean_auroc: judgments has {J.shape[0]} rows but correct has {y.size}.")
    ok = ~np.isnan(J)
    if not np.isin(J[ok], (0.0, 1.0)).all():
        raise ValueError("sample_mean_auroc: judgments must be 0/1 (NaN for missing).")
    S = J.shape[1]
    ks = list(range(1, S + 1)) if ks is None else [int(k) for k in ks]
    for k in ks:
        if not 1 <= k <= S:
            raise ValueError(f"sample_mean_auroc: k={k} is outside 1..{S} (the number of samples).")
    rng = np.random.default_rng(seed)
    rows = []
    for k in ks:
        if math.comb(S, k) <= n_draws:
            subsets = [list(c) for c in combinations(range(S), k)]
        else:
            subsets = [sorted(rng.choice(S, k, replace=False)) for _ in range(int(n_draws))]
        vals = []
        for cols in subsets:
            sub = J[:, cols]
            cnt = (~np.isnan(sub)).sum(axis=1)
            score = np.where(cnt > 0, np.nansum(sub, axis=1) / np.maximum(cnt, 1), 0.5)
            vals.append(auroc(y, score))
        rows.append({"k": k, "auroc": float(np.mean(vals)),
                     "sd": float(np.std(vals, ddof=1)) if len(vals) > 1 else 0.0,
                     "n_subsets": len(vals)})
    return pd.DataFrame(rows)


def text_vs_judgment(responses: pd.DataFrame, probe: str, *, text: str = "reasoning_text",
                     judgments=("confidence", "p_yes"), C: float = 1.0, cv: int = 5, seed: int = 0,
                     n_boot: int = 1000) -> pd.DataFrame:
    """Fit the text probe on one probe's replies (pooled over models) and compare AUROCs.

    Rows of ``responses`` with that ``probe``, a non-empty ``text`` and a known
    ``correct`` are used; every judgment column must be present on those rows
    (rows missing one are dropped). Returns :func:`compare_auroc`'s table with the
    text probe first, then each judgment; the reference is the first judgment.
    ``attrs`` carries ``n_items`` and the fitted ``probe``.
    """
    cols = [c for c in judgments if c in responses.columns]
    rows = responses[(responses["probe"] == probe)].dropna(subset=[text, "correct", *cols])
    rows = rows[rows[text].astype(str).str.strip() != ""]
    if rows.empty:
        raise ValueError(f"text_vs_judgment: no {probe!r} rows with {text!r}, 'correct' and {cols}.")
    fitted = ReasoningTextProbe(C=C, cv=cv, seed=seed).fit(rows[text].astype(str).tolist(),
                                                           rows["correct"].to_numpy())
    scores = {"text_probe": fitted.oof_proba_}
    scores.update({c: rows[c].to_numpy(dtype=float) for c in cols})
    out = compare_auroc(fitted.y_, scores, n_boot=n_boot, seed=seed, reference=cols[0] if cols else None)
    out.attrs["probe"] = fitted
    out.attrs["n_items"] = len(rows)
    return out


def sample_matrix(sampled: pd.DataFrame, outcomes: pd.DataFrame, probe: str = "prospective", *,
                  outcome_probe: str = "answer_no_context", value: str = "confidence"):
    """A repeated judgment as a (model, item_id) x sample matrix, with the outcome it predicts.

    ``sampled`` holds the repeated ``probe`` rows (column ``sample``); ``outcomes``
    the same models' single attempts ``outcome_probe`` (default: the answer without
    the context, the target of a prospective judgment). Returns ``(J, correct)``:
    ``J`` has one column per sample (NaN where a sample failed to parse) and
    ``correct`` is aligned to its rows; pairs with no known outcome are left out.
    Feed them to :func:`sample_mean_auroc`.
    """
    rows = sampled[sampled["probe"] == probe]
    if rows.empty:
        raise ValueError(f"sample_matrix: no {probe!r} rows in the sampled table; probes there: "
                         f"{sorted(sampled['probe'].dropna().unique())}.")
    J = rows.pivot_table(index=["model", "item_id"], columns="sample", values=value, aggfunc="first",
                         dropna=False)
    J = J.reindex(columns=sorted(rows["sample"].dropna().unique()))
    y = (outcomes[outcomes["probe"] == outcome_probe].dropna(subset=["correct"])
         .drop_duplicates(["model", "item_id"]).set_index(["model", "item_id"])["correct"])
    keep = J.index.intersection(y.index)
    if keep.empty:
        raise ValueError(f"sample_matrix: no (model, item_id) pair has both sampled {probe!r} rows and a "
                         f"graded {outcome_probe!r} attempt; record the outcome run for the same models "
                         "and items.")
    J = J.loc[keep].astype(float)
    J.columns = [int(c) for c in J.columns]
    return J, y.loc[keep].astype(float)
