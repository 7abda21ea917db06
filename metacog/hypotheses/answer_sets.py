"""What a model could answer to each item: the answer set a chance level is read from.

An item's answer set is what the prompt offers the model to choose from:

- the item's own label set, ``meta['labels']`` (LegalBench's classification tasks; the
  question states it, e.g. "Answer with one of: No, Yes.");
- else a label set stated in the question itself ("Answer with one of: a, b, c.");
- else the options of a multiple-choice item (``meta['options']``, letters A, B, ...), but
  only where the model sees them: MMLU-Pro's options are the context the probes hide, so an
  answer without the context is a free answer;
- else Yes/No for an item whose gold is a bool.

Anything else is a free answer: there is no set to guess from, so no chance level is known.
:func:`answer_sets` gives one row per item (item_id, answer_set, n_options, truth), the
``items=`` argument of :func:`metacog.hypotheses.adequacy.adequacy`.
"""

from __future__ import annotations

import re
import string

import numpy as np
import pandas as pd

#: Probes whose prompt includes the item's context (and so, for multiple-choice items whose
#: context is the options, the options themselves).
CONTEXT_SHOWN = ("answer",)
#: "Answer with one of: No, Yes." at the end of a question.
_HINT = re.compile(r"Answer with one of:\s*(?P<labels>[^\n]+?)\.?\s*$")
SEP = ", "


def _stated(question: str) -> tuple[str, ...]:
    m = _HINT.search(str(question or ""))
    if not m:
        return ()
    return tuple(x.strip() for x in m.group("labels").split(SEP) if x.strip())


def item_answer_set(item, probe: str = "answer_no_context") -> tuple[tuple[str, ...], str | None]:
    """(the labels the model could give, the true one or None) for one item under ``probe``;
    ``((), None)`` for a free answer."""
    meta = item.meta or {}
    labels = tuple(str(x) for x in (meta.get("labels") or ())) or _stated(item.question)
    if labels:
        gold = str(item.gold) if isinstance(item.gold, (str, int, bool)) else None
        return labels, gold if gold in labels else None
    options = meta.get("options") or ()
    if options and (probe in CONTEXT_SHOWN or item.context_kind != "options"):
        letters = tuple(string.ascii_uppercase[:len(options)])
        idx = meta.get("answer_index")
        return letters, letters[idx] if isinstance(idx, (int, np.integer)) and 0 <= idx < len(letters) else None
    if isinstance(item.gold, (bool, np.bool_)):
        return ("No", "Yes"), "Yes" if item.gold else "No"
    return (), None


def answer_sets(items, probe: str = "answer_no_context") -> pd.DataFrame:
    """One row per item: item_id, answer_set (the labels joined by ', '; missing for a free
    answer), n_options (their number; NaN for a free answer) and truth (the true label when
    it is one of them)."""
    rows = []
    for it in items:
        labels, truth = item_answer_set(it, probe)
        rows.append({"item_id": str(it.item_id), "answer_set": SEP.join(labels) if labels else None,
                     "n_options": float(len(labels)) if labels else np.nan, "truth": truth})
    out = pd.DataFrame(rows, columns=["item_id", "answer_set", "n_options", "truth"])
    dup = out["item_id"].duplicated()
    if dup.any():
        raise ValueError(f"answer_sets: item {out.loc[dup, 'item_id'].iloc[0]!r} appears twice; "
                         f"pass the items of one benchmark.")
    return out


def answer_sets_for(responses: pd.DataFrame, probe: str = "answer_no_context") -> pd.DataFrame:
    """:func:`answer_sets` of the items ``responses`` answer, loaded by their ``benchmark``
    column (every item of each benchmark, then the ones answered). Raises ValueError when the
    table names no benchmark, names one with no loader, or answers items the loader lacks."""
    from metacog.benchmarks import LOADERS, load_items

    if "benchmark" not in responses.columns or responses["benchmark"].isna().all():
        raise ValueError("answer_sets_for: the responses have no 'benchmark' column to load items by; "
                         "pass the items themselves.")
    frames = []
    for name, rows in responses.groupby(responses["benchmark"].astype(str), sort=True):
        if name not in LOADERS:
            raise ValueError(f"answer_sets_for: no loader for benchmark {name!r}; pass the items themselves.")
        wanted = set(rows["item_id"].astype(str))
        sets = answer_sets([it for it in load_items(name) if str(it.item_id) in wanted], probe)
        lost = wanted - set(sets["item_id"])
        if lost:
            raise ValueError(f"answer_sets_for: {len(lost)} {name} item(s) answered are not among its "
                             f"items, e.g. {sorted(lost)[0]!r}.")
        frames.append(sets)
    return pd.concat(frames, ignore_index=True)
