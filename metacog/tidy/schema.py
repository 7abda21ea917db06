"""The tidy response schema: one row per model x item x probe (x sample).

Every table of model responses in the book, whether loaded from a public log
(Atlas, Battery) or produced by :mod:`metacog.elicit`, has these columns.
Columns a source cannot fill are present and missing (NaN / None).
A value a source filled in for the model (``parse_status == 'imputed'``) is never kept as
a confidence: it is missing, so a matrix built from the rows
(:func:`metacog.tidy.tables.wide`) has a gap there, not a made-up judgment.
"""

from __future__ import annotations

import pandas as pd

#: Column name -> (dtype, description). The order is the column order.
COLUMNS: dict[str, tuple[str, str]] = {
    "model": ("string", "Canonical model id, e.g. 'gpt-5.4' or 'local/smollm2-135m'."),
    "item_id": ("string", "Item id, unique within the benchmark."),
    "benchmark": ("string", "Source of the item: 'atlas', 'battery', 'squad', 'mmlu_pro', ..."),
    "probe": ("string", "What was asked: 'answer', 'answer_no_context', 'prospective', "
              "'counterfactual', 'c0', 'c1', 'c2', 'verbal_confidence', 'keep_withdraw', "
              "'bet_nobet', 'path_choice'."),
    "sample": ("Int64", "Repeat index for repeated sampling of the same call; 0 for the first."),
    "domain": ("string", "Item domain or category (benchmark-specific coarse grouping)."),
    "subject": ("string", "Finer item grouping (MMLU subject, Battery track, LegalBench task...)."),
    "decision": ("string", "Parsed decision: 'yes'/'no'/'abstain' for judgments, the answer text or letter for attempts."),
    "confidence": ("float64", "Confidence that the model is (or would be) correct, in [0, 1]. "
                   "Binary judgments are 0 or 1; verbal scales are rescaled."),
    "p_yes": ("float64", "First-token P(Yes) / (P(Yes) + P(No)) when the backend gives logprobs."),
    "mean_token_p": ("float64", "Mean probability of the reply's tokens (each token's exp(logprob), "
                     "averaged) when the backend gives token log-probabilities."),
    "option_probs": ("string", "Multiple-choice answers: JSON object of each option letter's probability "
                     "at the answer token, from the backend's top log-probabilities (letters it "
                     "did not list are absent)."),
    "correct": ("float64", "1 if the model's answer to this item was correct, 0 if not, missing if unknown."),
    "parse_status": ("string", "'ok', 'unparseable', 'empty', 'error' (call failed), 'missing', or "
                     "'imputed' (a public log filled in a default where its parser found no "
                     "confidence; confidence is then missing), or 'no_answer' (a judgment of an "
                     "answer the model declined to give, e.g. Battery T6: confidence missing). "
                     "Unparseable replies are kept, never dropped."),
    "raw_text": ("string", "The full reply text."),
    "reasoning_text": ("string", "The reasoning part of the reply (before the final decision)."),
    "latency_s": ("float64", "Wall-clock seconds for the call (missing when replayed from a public log)."),
    "prompt_tokens": ("Int64", "Prompt tokens."),
    "completion_tokens": ("Int64", "Completion tokens."),
    "cost_usd": ("float64", "Estimated cost in US dollars (0 for local models)."),
    "backend": ("string", "How the row was produced: 'litellm', 'llama_cpp', 'batch' (a provider's batch API), or 'log:<dataset>'."),
    "backend_version": ("string", "Version of the backend library or dataset commit."),
    "template_version": ("string", "Prompt template id and version, e.g. 'prospective@1'."),
    "cache_key": ("string", "Content address of the call in the response cache."),
}

REQUIRED = ("model", "item_id", "probe", "confidence", "correct")

#: The probes this book asks or reads. Other probe names are allowed (a user's own
#: elicitation); :func:`metacog.data.load_responses` notes them.
PROBES = ("answer", "answer_no_context", "prospective", "counterfactual", "c0", "c1", "c2",
          "verbal_confidence", "keep_withdraw", "bet_nobet", "path_choice")


def empty() -> pd.DataFrame:
    """An empty response table with every column and its dtype."""
    return conform(pd.DataFrame({c: [] for c in COLUMNS}))


def conform(df: pd.DataFrame, *, source: str = "table") -> pd.DataFrame:
    """Return ``df`` with every schema column, in schema order, with schema dtypes.

    Extra columns are kept after the schema columns. Raises ValueError, naming
    ``source`` and the column, when a required column is missing, when a value
    cannot be cast to the column's dtype (showing the first bad values), when
    ``confidence``, ``p_yes`` or ``mean_token_p`` leave [0, 1], or when ``correct`` is not 0, 1 or
    missing (partial credit such as 0.5 must be binarised by the caller), or when a row
    marked ``parse_status == 'imputed'`` still has a confidence.
    """
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise ValueError(
            f"{source}: missing required column(s) {missing}; a response table needs "
            f"{list(REQUIRED)} (see metacog.tidy.schema.COLUMNS)."
        )
    out = df.copy()
    for col, (dtype, _) in COLUMNS.items():
        if col not in out.columns:
            out[col] = pd.Series(pd.NA if dtype in ("string", "Int64") else float("nan"),
                                 index=out.index)
        out[col] = _cast(out[col], dtype, col, source)
    for col in ("confidence", "correct", "p_yes", "mean_token_p"):
        ok = out[col].isin([0.0, 1.0]) if col == "correct" else out[col].between(0, 1)
        bad = out[col].notna() & ~ok
        if bad.any():
            row = out.index[bad.to_numpy()][0]
            rule = "be 0, 1 or missing (binarise partial credit first)" if col == "correct" else "lie in [0, 1]"
            raise ValueError(
                f"{source}: column {col!r} must {rule}; row {row} has {float(out.at[row, col])!r} "
                f"({int(bad.sum())} such row(s))."
            )
    filled = (out["parse_status"] == "imputed").fillna(False).to_numpy() & out["confidence"].notna().to_numpy()
    if filled.any():
        row = out.index[filled][0]
        raise ValueError(f"{source}: row {row} has parse_status 'imputed' but a confidence "
                         f"({float(out.at[row, 'confidence'])!r}); an imputed value is not the "
                         f"model's judgment: set it missing ({int(filled.sum())} such row(s)).")
    extra = [c for c in out.columns if c not in COLUMNS]
    return out[list(COLUMNS) + extra]


def _cast(values: pd.Series, dtype: str, col: str, source: str) -> pd.Series:
    """``values`` as ``dtype``; a ValueError naming the column and its first bad values otherwise."""
    try:
        return values.astype(dtype)
    except (ValueError, TypeError):
        pass
    numeric = pd.to_numeric(values, errors="coerce")
    bad = values[numeric.isna() & values.notna()]
    if dtype == "Int64" and bad.empty:
        bad = values[numeric.notna() & (numeric % 1 != 0)]
    shown = ", ".join(f"row {i}: {v!r}" for i, v in bad.head(3).items())
    raise ValueError(f"{source}: column {col!r} must be {dtype} but {len(bad)} value(s) are not "
                     f"({shown}); fix or remove them.") from None


def describe() -> pd.DataFrame:
    """The schema as a table (column, dtype, description), for the book."""
    return pd.DataFrame(
        [(c, d, text) for c, (d, text) in COLUMNS.items()],
        columns=["column", "dtype", "description"],
    )
