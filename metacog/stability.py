"""The miscalibration chapter's hidden-state study, recorded once and replayed by the book.

Design (paper 2, on the local panel): from one model's forced-answer (C0) log on the
audit set, draw ``n_per_group`` confident-correct (CC) and overconfident-wrong (OCW)
items; probe each under three prompts — the plain C0 prompt, the C2 self-critique
prompt, and the plain prompt padded to the self-critique prompt's length (a control
for prompt length) — with Gaussian embedding noise (sigma = 0.01 x the embedding RMS,
40 trials as one batch); and sweep sigma on a few of the plain prompts.

Every probe goes through :func:`metacog.hidden.probe_cached`, whose parquet files
live in ``data/probe/``: ``python -m metacog.stability <model>`` (or ``make probe``)
records them with torch installed; the book calls :func:`study` with
``compute=False`` and never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from metacog import hidden

CONDITIONS = ("plain", "self_critique", "length_control")
SWEEP_SIGMAS = (0.003, 0.01, 0.03, 0.1)


@dataclass
class Study:
    groups: pd.DataFrame  # item_id, group (CC / OCW), confidence, correct
    probe: pd.DataFrame  # one row per condition x item x layer, with group
    sweep: pd.DataFrame  # one row per sigma x item x layer (plain prompt)

    def summary(self) -> pd.DataFrame:
        """Mean displacement over layers >= 1 per condition and group."""
        t = self.probe[self.probe["layer"] >= 1]
        return t.groupby(["condition", "group"])["displacement"].mean().unstack("group")


def select_items(responses: pd.DataFrame, model: str, n_per_group: int = 8, seed: int = 0,
                 threshold: float = hidden.HIGH_CONFIDENCE) -> pd.DataFrame:
    """Up to ``n_per_group`` CC and OCW items of ``model``'s C0 answers, drawn with ``seed``."""
    own = responses[(responses["model"] == model) & (responses["probe"] == "c0")]
    if own.empty:
        raise ValueError(f"select_items: no C0 rows for model {model!r}; models in the table: "
                         f"{sorted(responses['model'].unique())}.")
    groups = hidden.confidence_groups(own, threshold=threshold, probe="c0")
    picked = (groups.sample(frac=1.0, random_state=seed).groupby("group").head(n_per_group)
              .sort_values(["group", "item_id"]).reset_index(drop=True))
    return picked


def study(model: str, responses: pd.DataFrame, items, *, n_per_group: int = 8, n_sweep: int = 4,
          sigma: float = hidden.SIGMA, n_trials: int = hidden.N_TRIALS, seed: int = 0,
          sweep_sigmas=SWEEP_SIGMAS, compute: bool = False, cache=None) -> Study:
    """Run (``compute=True``) or replay (``compute=False``) the study for one local model.

    ``model`` is a panel name such as 'smollm2-135m'; ``responses`` the audit run with
    rows for 'local/<model>'; ``items`` the audit items (a list of Items or a frame).
    """
    groups = select_items(responses, f"local/{model}" if "/" not in model else model,
                          n_per_group, seed)
    ids = list(groups["item_id"])
    frame = items if isinstance(items, pd.DataFrame) else pd.DataFrame(
        [{"item_id": i.item_id, "question": i.question} for i in items])
    chosen = frame[frame["item_id"].astype(str).isin(ids)][["item_id", "question"]]
    name = model.split("/")[-1]
    conditions = {
        "plain": hidden.build_prompts(chosen, "c0").loc[ids],
        "self_critique": hidden.build_prompts(chosen, "c2").loc[ids],
        "length_control": hidden.length_control(chosen, "c0", "c2").loc[ids],
    }
    probe = hidden.probe_conditions(name, conditions, sigma=sigma, n_trials=n_trials, seed=seed,
                                    compute=compute, cache=cache)
    probe = probe.merge(groups[["item_id", "group"]], left_on="prompt_id", right_on="item_id",
                        how="left").drop(columns="item_id")
    sweep_ids = ids[:n_sweep]
    sweep = hidden.sigma_sweep(name, conditions["plain"].loc[sweep_ids], sweep_sigmas, n_trials=n_trials,
                               seed=seed, compute=compute, cache=cache)
    return Study(groups=groups, probe=probe, sweep=sweep)


def main(argv: list[str] | None = None) -> int:
    import argparse

    from metacog import collect
    from metacog.benchmarks import audit

    p = argparse.ArgumentParser(prog="python -m metacog.stability", description=__doc__)
    p.add_argument("models", nargs="+", help="panel names, e.g. smollm2-135m")
    p.add_argument("--run", default="audit_policies")
    p.add_argument("--n-per-group", type=int, default=8)
    p.add_argument("--n-sweep", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    responses = collect.load(args.run)
    items = audit.load_frame()
    for m in args.models:
        s = study(m, responses, items, n_per_group=args.n_per_group, n_sweep=args.n_sweep,
                  seed=args.seed, compute=True)
        print(f"{m}: {len(s.groups)} items\n{s.summary().round(5)}", flush=True)
        hidden.unload_models()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
