"""Example response files: simulated panels in the tidy layout, for docs and tests.

:func:`example_responses` gives a file "the project has never seen" without
shipping anyone's data: a panel of simulated models answering items of a few
benchmarks, built on :func:`metacog.power.simulate.population`. Correctness and the
latent confidence come from that generative model; ``kappa`` plants the
individual signal (a model's confidence tracks its *own* model-specific
performance), so the analyses have something known to find.

Confidence is continuous: ``logistic(SCALE * (c* - t_j))`` rounded to 0.05,
where ``c*`` is the latent confidence and ``t_j`` the model's threshold. It is
at least 0.5 exactly where the simulator's binary confidence is 1 (up to the
rounding), and the rounding makes ties, so median and numeric cuts are both
exercised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from metacog.power.simulate import population

#: Spread of the logistic map from latent confidence to [0, 1] (a spread like a verbal 0-100 scale).
SCALE = 1.0
#: Confidence is rounded to this step, like a verbal 0-100 scale in steps of 5.
STEP = 0.05
#: A coarse domain for the default benchmarks; others get 'other'.
DOMAINS = {"algebra": "formal_reasoning", "history": "humanities", "law": "social_sciences"}
#: File suffix -> writer name, for :func:`write_responses`.
FORMATS = {".csv": "csv", ".parquet": "parquet", ".jsonl": "jsonl"}


def example_responses(n_models: int = 11, benchmarks=("algebra", "history", "law"),
                      n_items: int = 200, kappa: float = 0.0, seed: int = 0) -> pd.DataFrame:
    """A simulated panel in the tidy response layout, one row per model x item.

    ``n_items`` items per benchmark; every benchmark is its own population draw
    (own item difficulties) answered by the same ``n_models`` models (same
    abilities and thresholds). Returns columns model, item_id, benchmark, domain,
    subject, probe ('verbal_confidence'), sample (0), confidence (continuous, steps
    of 0.05) and correct (0/1). Deterministic given ``seed``.

    >>> df = example_responses(n_models=4, n_items=30, seed=0)
    >>> len(df), df["model"].nunique(), sorted(df["benchmark"].unique())
    (360, 4, ['algebra', 'history', 'law'])
    >>> df.equals(example_responses(n_models=4, n_items=30, seed=0))
    True
    """
    benchmarks = [str(b) for b in benchmarks]
    if not benchmarks or len(set(benchmarks)) != len(benchmarks):
        raise ValueError(f"example_responses: give one or more distinct benchmark names, got {benchmarks}.")
    if int(n_models) != n_models or n_models < 3:
        raise ValueError(f"example_responses: n_models must be an integer >= 3, got {n_models!r}.")
    if int(n_items) != n_items or n_items < 2:
        raise ValueError(f"example_responses: n_items must be an integer >= 2, got {n_items!r}.")
    rng = np.random.default_rng(seed)
    ability = rng.normal(0.5, 0.5, int(n_models))
    thresholds = rng.normal(0.0, 0.5, int(n_models))
    models = [f"model-{j + 1:02d}" for j in range(int(n_models))]
    seeds = np.random.SeedSequence(seed).spawn(len(benchmarks))
    frames = []
    for bench, ss in zip(benchmarks, seeds):
        pop = population(int(n_models), int(n_items), kappa=kappa,
                         seed=int(ss.generate_state(1)[0]), ability=ability,
                         thresholds=thresholds, keep_latent=True)
        latent = pop.latent["c_star"] - thresholds[None, :]
        conf = np.round(1.0 / (1.0 + np.exp(-SCALE * latent)) / STEP) * STEP
        items = [f"{bench}-{i + 1:04d}" for i in range(int(n_items))]
        frame = pd.DataFrame({
            "model": np.tile(models, len(items)),
            "item_id": np.repeat(items, len(models)),
            "confidence": np.round(conf.ravel(), 2),
            "correct": pop.correct.to_numpy().ravel().astype(float),
        })
        frame.insert(2, "benchmark", bench)
        frame.insert(3, "domain", DOMAINS.get(bench, "other"))
        frame.insert(4, "subject", bench)
        frame.insert(5, "probe", "verbal_confidence")
        frame.insert(6, "sample", 0)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def write_responses(df: pd.DataFrame, path: str | Path) -> Path:
    """Write a response table as CSV, Parquet or JSONL, chosen by ``path``'s suffix; return the path."""
    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: unknown file type {path.suffix!r}; name the file .csv, .parquet "
                         f"or .jsonl.")
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "csv":
        df.to_csv(path, index=False)
    elif kind == "parquet":
        df.to_parquet(path, index=False)
    else:
        df.to_json(path, orient="records", lines=True)
    return path


def one_axis_panel(n_items: int = 300, n_models: int = 5, seed: int = 0):
    """(confidence, correct): items x models 0/1 tables whose correctness and confidence both
    follow one shared difficulty axis, with no self-knowledge planted (the API page's examples).

    >>> confidence, correct = one_axis_panel()
    >>> confidence.shape, list(correct.columns[:2])
    ((300, 5), ['m0', 'm1'])
    """
    rng = np.random.default_rng(seed)
    ease = rng.normal(size=n_items)
    models = [f"m{j}" for j in range(n_models)]
    correct = pd.DataFrame({m: (ease + rng.normal(size=n_items) > 0).astype(float) for m in models})
    confidence = pd.DataFrame({m: (ease + rng.normal(size=n_items) > -0.3).astype(float) for m in models})
    return confidence, correct
