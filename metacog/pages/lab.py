"""The fifteen-minute lab (``notebooks/lab.md``): a first metacognition eval, end to end.

One small offline model answers yes/no items of the audit set under policy C0 (answer, then
state the probability of being right). The lab gates the answers against chance, scores the
confidence by its AUROC with DeLong's interval, decides the claims with
:func:`metacog.hypotheses.verdict.decide` and puts the result beside recorded runs.

- :func:`ask` — the lab's responses: asked live through :func:`metacog.elicit.run` (with a
  response cache in :func:`cache_folder`, never in the repository), or replayed from the
  recorded run :data:`RECORDED_RUN` so that no model is loaded;
- :func:`score` / :func:`compare` / :func:`display_compare` — gate and AUROCs per model, for
  the lab and for every source beside it;
- :func:`agreement` — how far a live run reproduces the recording;
- :func:`verdicts`, :func:`elicit_command`, :func:`width_sentence`.
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.hypotheses.common import short_model
from metacog.tidy.report import fmt_ci, fmt_count, fmt_num, pretty

#: The package's own folder: nothing is ever written into it.
PACKAGE = Path(str(resources.files("metacog"))).resolve()  # the installed package: never a cache folder
#: The benchmark the lab asks and the recorded run it replays (the audit set under C0/C1/C2).
BENCHMARK = "audit"
RECORDED_RUN = "audit_policies"
POLICIES = ("c0", "c1", "c2")
#: Label of the lab's own rows in the comparison table.
LAB = "this lab"


def cache_folder(cache_dir: str = "") -> Path:
    """Where a live lab keeps its response cache: ``cache_dir`` when given, else ``lab`` in
    the user cache (:func:`metacog.data.fetch.cache_dir`). Raises ValueError for a folder
    inside the book's checkout or the package (the lab's replies never belong there)."""
    from metacog import settings
    from metacog.data.fetch import cache_dir as user_cache

    path = Path(cache_dir).expanduser() if str(cache_dir).strip() else user_cache() / "lab"
    path = path.resolve()
    for root in (settings.project_root(), PACKAGE):
        if root is not None and (path == root or root in path.parents):
            raise ValueError(f"cache_dir {cache_dir!r}: the lab's response cache must live outside the "
                             f"repository; leave cache_dir empty (the user cache) or give a temporary "
                             f"folder.")
    return path


def _check(n_items: int, policy: str) -> None:
    if int(n_items) < 1:
        raise ValueError(f"n_items must be at least 1, got {n_items}.")
    if policy not in POLICIES:
        raise ValueError(f"policy {policy!r}: the lab asks one of the audit policies {list(POLICIES)}.")


def _replay(items, model: str, policy: str) -> pd.DataFrame:
    from metacog.data import load_responses

    rec = load_responses(RECORDED_RUN)
    if model not in set(rec["model"]):
        raise ValueError(f"model {model!r} is not in the recorded run {RECORDED_RUN!r} (it has "
                         f"{', '.join(sorted(rec['model'].unique()))}); pick one of those or set "
                         f"live = True to ask it.")
    ids = [i.item_id for i in items]
    rows = rec[(rec["model"] == model) & (rec["probe"] == policy) & rec["item_id"].isin(ids)]
    missing = len(set(ids) - set(rows["item_id"]))
    if missing:
        raise ValueError(f"the recorded run {RECORDED_RUN!r} lacks {missing} of the {len(ids)} items "
                         f"this n_items and seed draw; set live = True to ask them.")
    return rows.reset_index(drop=True)


def ask(n_items: int = 30, *, live: bool = False, model: str = "local/smollm2-135m",
        policy: str = "c0", seed: int = 0, cache_dir: str = "", progress: bool = False) -> pd.DataFrame:
    """The lab's responses: ``model`` under ``policy`` on a stratified subset of ``n_items``
    audit items drawn with ``seed`` (tidy schema, one row per item).

    ``live=False`` replays the recorded run (no model is loaded); ``live=True`` asks the model
    through :func:`metacog.elicit.run` with the recorded run's settings, caching replies in
    :func:`cache_folder` (``cache_dir``). ``attrs`` holds 'mode' ('live' or 'replayed'),
    'seconds' (wall time of this call), 'asked' (calls made now), 'cached' (calls replayed
    from the cache) and 'cache' (the cache folder, '' when replaying).
    """
    from metacog.benchmarks import load_items

    _check(n_items, policy)
    t0 = time.perf_counter()
    items = load_items(BENCHMARK, n_items=int(n_items), seed=int(seed))
    if not live:
        out = _replay(items, model, policy)
        out.attrs.update(mode="replayed", asked=0, cached=0, cache="")
    else:
        from metacog import elicit
        folder = cache_folder(cache_dir)
        out = elicit.run(items, models=[model], probes=[policy], cache=folder, seed=int(seed),
                         progress=progress)
        counts = out.attrs.get("counts", {})
        out.attrs.update(mode="live", asked=int(counts.get("done", 0)),
                         cached=int(counts.get("cached", 0)), cache=str(folder))
    out.attrs["seconds"] = time.perf_counter() - t0
    return out


def examples(responses: pd.DataFrame, n: int = 5, seed: int = 0):
    """``n`` of the lab's replies for a page: question, gold answer, the model's answer, its
    stated confidence, first-token P(Yes) and whether it was right."""
    from metacog.benchmarks import audit

    items = audit.load_frame().set_index("item_id")
    rows = responses.dropna(subset=["correct"])
    rows = rows.sample(min(int(n), len(rows)), random_state=int(seed)) if len(rows) else rows
    t = pd.DataFrame({"question": items.reindex(rows["item_id"])["question"].to_numpy(),
                      "gold": items.reindex(rows["item_id"])["gold"].to_numpy(),
                      "answer": rows["decision"].to_numpy(),
                      "stated confidence": rows["confidence"].to_numpy(),
                      "P(Yes)": rows["p_yes"].to_numpy(),
                      "right": np.where(rows["correct"].to_numpy() == 1, "yes", "no")})
    return pretty(t, digits=2)


def gate_sentence(gate: pd.DataFrame) -> str:
    """The adequacy gate in words, model by model: who clears the bar and what follows."""
    if gate.empty:
        return "No answers were graded, so no model can be judged."
    parts = []
    for r in gate.to_dict("records"):
        name = short_model(r["model"])
        if r["carries_signal"]:
            parts.append(f"The answers of {name} carry signal: its confidence can be judged.")
        else:
            parts.append(f"The answers of {name} do not clear the bar, so it stays in the tables, "
                         f"marked as at chance, and out of every claim about its metacognition: "
                         f"its answers give its confidence nothing to track.")
    return " ".join(parts)


def score(responses: pd.DataFrame, policy: str = "c0", *, min_items: int = 20) -> pd.DataFrame:
    """Gate and AUROCs of every model under ``policy``, one row per model and score.

    Columns: model, items, accuracy, acc_ci_low, acc_ci_high (exact), carries_signal, task
    ('knowledge': P(Yes) against the gold label; 'confidence': a confidence against the
    model's own correctness), score, n_pos, n_neg, auroc, ci_low, ci_high (DeLong),
    sufficient. A model with fewer than ``min_items`` answers never carries signal.
    """
    from metacog.pages.audit import audit_scores
    from metacog.pages.benchmark import model_gate

    gate = model_gate(responses, policy, min_items=min_items)
    sc = audit_scores(responses, policy, gate)
    g = gate[["model", "accuracy", "ci_low", "ci_high"]].rename(
        columns={"ci_low": "acc_ci_low", "ci_high": "acc_ci_high"})
    out = sc.merge(g, on="model", how="left")
    cols = ["model", "items", "accuracy", "acc_ci_low", "acc_ci_high", "carries_signal", "task", "score",
            "n_pos", "n_neg", "auroc", "ci_low", "ci_high", "sufficient"]
    return out[cols]


def compare(lab: pd.DataFrame, sources: list[str], policy: str = "c0", *,
            min_items: int = 20) -> tuple[pd.DataFrame, dict]:
    """:func:`score` of the lab's responses (run :data:`LAB`) stacked over the score of every
    source under the same policy (run = the source's name, a file's by its file name only:
    :func:`metacog.data.responses.source_name`). Returns (table, skipped), skipped mapping a
    source without ``policy`` answers (by that name) to a sentence saying why."""
    from metacog.data import load_responses
    from metacog.data.responses import source_name

    parts = [score(lab, policy, min_items=min_items).assign(run=LAB)]
    skipped = {}
    for given in sources:
        df = load_responses(given)
        src = source_name(given)
        if policy not in set(df["probe"].dropna().astype(str)):
            skipped[src] = (f"it has no answers under {policy.upper()} (its probes: "
                            f"{', '.join(sorted(map(str, df['probe'].dropna().unique())))})")
            continue
        parts.append(score(df, policy, min_items=min_items).assign(run=src))
    table = pd.concat(parts, ignore_index=True)
    return table[["run"] + [c for c in table.columns if c != "run"]], skipped


_SCORE_NAMES = {"confidence": "stated P(correct)", "p_answer": "P(its answer)"}


def display_compare(table: pd.DataFrame):
    """One row per run and model: items, accuracy (95% CI), and the AUROC of each confidence
    for telling its right answers from its wrong ones, or why there is no number."""
    from metacog.pages.benchmark import auroc_cell

    rows = []
    conf = table[table["task"] == "confidence"]
    for (run, model), g in conf.groupby(["run", "model"], sort=False):
        first = g.iloc[0]
        row = {"run": run, "model": short_model(model) + ("" if first["carries_signal"] else " (answers at chance)"),
               "items": int(first["items"]),
               "accuracy (95% CI)": fmt_ci(first["accuracy"], first["acc_ci_low"], first["acc_ci_high"],
                                           digits=2)}
        for r in g.to_dict("records"):
            row[f"AUROC, {_SCORE_NAMES[r['score']]} (95% CI)"] = auroc_cell(r)
        rows.append(row)
    return pretty(pd.DataFrame(rows))


def agreement(lab: pd.DataFrame, policy: str = "c0") -> pd.DataFrame:
    """Per model, how a live lab run compares with the recorded run on the items both hold:
    items, same_decision (share of identical Yes/No), same_confidence (share of identical
    stated confidences) and max_p_yes_diff (largest difference in first-token P(Yes))."""
    from metacog.data import load_responses

    rec = load_responses(RECORDED_RUN)
    cols = ["model", "item_id", "decision", "confidence", "p_yes"]
    both = lab.loc[lab["probe"] == policy, cols].merge(
        rec.loc[rec["probe"] == policy, cols], on=["model", "item_id"], suffixes=("", "_rec"))
    rows = []
    for model, g in both.groupby("model", sort=True):
        rows.append({"model": short_model(model), "items": len(g),
                     "same_decision": float((g["decision"] == g["decision_rec"]).mean()),
                     "same_confidence": float(np.isclose(g["confidence"], g["confidence_rec"]).mean()),
                     "max_p_yes_diff": float((g["p_yes"] - g["p_yes_rec"]).abs().max())})
    return pd.DataFrame(rows, columns=["model", "items", "same_decision", "same_confidence",
                                       "max_p_yes_diff"])


def timing_sentence(responses: pd.DataFrame) -> str:
    """What the lab's responses cost: calls made and replayed from the cache and the wall time
    of a live run, or the recorded model time of a replay (about what a live run would take)."""
    a = responses.attrs
    if a.get("mode") == "live":
        secs = a.get("seconds", 0.0)
        took = "under a second" if secs < 1 else f"{fmt_num(secs, 0)} seconds"
        return (f"This run made {fmt_count(a.get('asked', 0), 'call')} and replayed "
                f"{fmt_count(a.get('cached', 0), 'call')} from the cache in {took}.")
    recorded = float(responses["latency_s"].sum()) if "latency_s" in responses else float("nan")
    if not np.isfinite(recorded):
        return "The recording does not say how long its calls took."
    return (f"When they were recorded the calls took {fmt_num(recorded, 0)} seconds of model time in "
            f"all, so a live run of this size takes about that long plus the model's loading time.")


def agreement_sentence(responses: pd.DataFrame, model: str, policy: str = "c0") -> str:
    """How a live run compares with the recording, in words; for a replay, that it is the
    recording."""
    if responses.attrs.get("mode") != "live":
        return ("This page replays the recording, so its rows are the recorded ones; run it live to "
                "see how exactly greedy decoding reproduces them.")
    agree = agreement(responses, policy)
    if agree.empty:
        return (f"The recorded run {RECORDED_RUN} does not hold {short_model(model)} under "
                f"{policy.upper()} on these items, so there is nothing to reproduce.")
    a = agree.iloc[0]
    diff = ("is the same to within 10⁻⁶" if a["max_p_yes_diff"] < 1e-6
            else f"differs by at most {fmt_num(a['max_p_yes_diff'], 3)}")
    return (f"Asked live, {a['model']} gave the recorded Yes/No on {fmt_num(a['same_decision'], pct=True)} "
            f"of the {fmt_count(a['items'], 'item')} both hold and the recorded stated confidence on "
            f"{fmt_num(a['same_confidence'], pct=True)}; its first-token P(Yes) {diff}.")


def verdicts(table: pd.DataFrame, policy: str = "c0", run: str = LAB) -> list:
    """The claims of :func:`metacog.pages.audit.audit_verdicts` (P(Yes) tells true from false
    items; stated confidence tells right from wrong answers, not tested for a model at
    chance) for the rows of ``run``."""
    from metacog.pages.audit import audit_verdicts

    rows = table[table["run"] == run].drop(columns=["run"])
    return audit_verdicts(rows, policy)


def elicit_command(n_items: int = 30, model: str = "local/smollm2-135m", policy: str = "c0",
                   seed: int = 0, out: str = "lab.parquet") -> str:
    """The ``metacog elicit`` command that asks what a live lab asks (cached in the user cache)."""
    _check(n_items, policy)
    return (f"metacog elicit --benchmark {BENCHMARK} --models {model} --probes {policy} "
            f"--n-items {int(n_items)} --seed {int(seed)} --out {out}")


def items_needed(table: pd.DataFrame, target: float = 0.1, score_name: str = "confidence",
                 model: str | None = None) -> str:
    """How many items ``model`` (default: the lab's first model) would need for its AUROC
    interval (on ``score_name``) to be ``target`` wide, by the square-root law, as a sentence."""
    rows = table[(table["run"] == LAB) & (table["task"] == "confidence") & (table["score"] == score_name)]
    if model is not None:
        rows = rows[rows["model"] == model]
    if rows.empty or not bool(rows["sufficient"].iloc[0]):
        return ("The lab's answers include fewer than ten right or ten wrong ones, so its interval is "
                "too rough to extrapolate from; ask more items first.")
    r = rows.iloc[0]
    width = r["ci_high"] - r["ci_low"]
    if width <= target:
        return (f"The interval is already {fmt_num(width, 2)} wide with {fmt_count(r['items'], 'item')}, "
                f"no wider than {fmt_num(target, 2)}.")
    need = int(np.ceil(r["items"] * (width / target) ** 2))
    return (f"The interval is {fmt_num(width, 2)} wide with {fmt_count(r['items'], 'item')}, so a width of "
            f"{fmt_num(target, 2)} needs about {fmt_count(need, 'item')}.")


def width_sentence(table: pd.DataFrame, model: str, score_name: str = "confidence") -> str:
    """How wide the lab's interval on ``model``'s AUROC is next to each recorded run's, and
    what the square-root law says about it (intervals shrink with the square root of n)."""
    rows = table[(table["model"] == model) & (table["task"] == "confidence")
                 & (table["score"] == score_name)]
    lab = rows[rows["run"] == LAB]
    other = rows[rows["run"] != LAB]
    what = _SCORE_NAMES[score_name]
    if lab.empty or not bool(lab["sufficient"].iloc[0]):
        return (f"The lab's answers from {short_model(model)} include fewer than ten right or ten "
                f"wrong ones, so the AUROC of its {what} has no trustworthy interval here.")
    a = lab.iloc[0]
    s = (f"With {fmt_count(a['items'], 'item')} the 95% interval on the AUROC of {short_model(model)}'s "
         f"{what} is {fmt_num(a['ci_high'] - a['ci_low'], 2)} wide")
    for r in other.to_dict("records"):
        if not r["sufficient"]:
            continue
        expect = (a["ci_high"] - a["ci_low"]) * np.sqrt(a["items"] / r["items"])
        s += (f"; in the run {r['run']}, with {fmt_count(r['items'], 'item')}, it is "
              f"{fmt_num(r['ci_high'] - r['ci_low'], 2)} wide (the square-root law predicts about "
              f"{fmt_num(expect, 2)})")
        break
    return s + "."
