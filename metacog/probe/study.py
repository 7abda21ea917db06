"""The miscalibration chapter's hidden-state study, recorded once and replayed by the book.

Design (paper 2, section 4 "internal probe", on the local panel): the confident-correct (CC)
and overconfident-wrong (OCW) groups are inherited from ONE frozen audit log — one answerer's
forced-answer (C0) answers at confidence >= 0.8 (paper 2: gpt-4.1-mini's; here the book's most
accurate audit answerer, chosen by the chapter) — and not recomputed from each probed model's
own answers: :func:`select_items` draws up to ``n_per_group`` items of each group (paper 2's
denser checks: 12 + 12), and the same item texts run through every probed model. Each item is
probed under three prompts — the plain C0 prompt, the C2 self-critique prompt, and the plain
prompt padded to the self-critique prompt's length (a control for prompt length) — with
Gaussian embedding noise (sigma = 0.01 x the embedding RMS, 40 trials as one batch), and the
plain prompt is swept over sigma on up to ``n_sweep`` items of each group.

Every probe goes through :func:`metacog.probe.probe_cached`, in batches of :data:`CHUNK` items
of one group (:func:`chunks`: one parquet file each in ``data/probe/``, so a killed recording
redoes at most one batch): ``metacog probe <model>`` (or ``make probe``) records them with torch
installed; the book calls :func:`study` with ``compute=False`` and never imports torch.

A probed model may be an *answerer* named ``'<model> · P(Yes)'``: the network probed is
``<model>`` itself; the name only says which reading of the model the chapter's gate judges.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from metacog.stats.p_yes import LABEL as P_YES_LABEL
from metacog.probe import (HIGH_CONFIDENCE, N_TRIALS, SIGMA, build_prompts, confidence_groups, group_difference,
                           length_control, paired_difference, probe_cached)

CONDITIONS = ("plain", "self_critique", "length_control")
SWEEP_SIGMAS = (0.003, 0.01, 0.03, 0.1)
#: Paper 2's items per group in its denser checks (12 CC + 12 OCW per model).
PAPER_GROUP_ITEMS = 12
#: Items of one group per recorded batch (one cache file).
CHUNK = 4
#: The prompt contrasts a - b that :meth:`Study.contrasts` reports.
CONTRASTS = (("self_critique", "plain"), ("length_control", "plain"), ("self_critique", "length_control"))


@dataclass
class Study:
    groups: pd.DataFrame  # item_id, group (CC / OCW), confidence, correct
    probe: pd.DataFrame  # one row per condition x item x layer, with group
    sweep: pd.DataFrame  # one row per sigma x item x layer (plain prompt)

    def summary(self) -> pd.DataFrame:
        """Mean displacement over layers >= 1 per condition and group."""
        t = self.probe[self.probe["layer"] >= 1]
        return t.groupby(["condition", "group"])["displacement"].mean().unstack("group")

    def contrasts(self, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
        """The paired prompt contrasts of :data:`CONTRASTS` over layers >= 1.

        One row per contrast 'a - b': ``rel_change`` is the mean over layers of the
        relative change of the displacement (delta / mean of b), ``layers_below`` the
        number of layers whose bootstrap CI of a - b lies wholly below zero.
        """
        t = self.probe[self.probe["layer"] >= 1]
        rows = []
        for a, b in CONTRASTS:
            d = paired_difference(t, a, b, n_boot=n_boot, seed=seed)
            rows.append({"contrast": f"{a} - {b}", "rel_change": float(d["rel_delta"].mean()),
                         "layers_below": int((d["ci_high"] < 0).sum()), "layers": len(d),
                         "items": int(d["n"].max())})
        return pd.DataFrame(rows).set_index("contrast")

    def fragility(self, *, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
        """OCW minus CC per prompt and layer >= 1, with ``covers_zero`` (the CI includes 0:
        confident errors move no more than confident hits)."""
        gd = group_difference(self.probe[self.probe["layer"] >= 1], "OCW", "CC",
                                     by="condition", n_boot=n_boot, seed=seed)
        return gd.assign(covers_zero=(gd["ci_low"] <= 0) & (gd["ci_high"] >= 0))

    def contrast_intervals(self, *, n_boot: int = 2000, level: float = 0.95,
                           seed: int = 0) -> pd.DataFrame:
        """The prompt contrasts of :data:`CONTRASTS` as one number each, with an interval.

        For 'a - b' the statistic is the relative change of the displacement, averaged over
        layers >= 1: mean over layers of (mean_a - mean_b) / mean_b, the items paired by
        prompt. The interval is a percentile bootstrap over items (the same resampled items
        under both prompts). One row per contrast: contrast, items, layers, rel_change,
        ci_low, ci_high.
        """
        t = self.probe[self.probe["layer"] >= 1]
        rng = np.random.default_rng(seed)
        rows = []
        for a, b in CONTRASTS:
            wa = t[t["condition"] == a].pivot_table(index="prompt_id", columns="layer", values="displacement")
            wb = t[t["condition"] == b].pivot_table(index="prompt_id", columns="layer", values="displacement")
            ids, cols = wa.index.intersection(wb.index), wa.columns.intersection(wb.columns)
            xa, xb = wa.loc[ids, cols].to_numpy(), wb.loc[ids, cols].to_numpy()
            n = len(ids)
            est = float(((xa.mean(0) - xb.mean(0)) / xb.mean(0)).mean()) if n else np.nan
            lo = hi = np.nan
            if n >= 2:
                idx = rng.integers(0, n, size=(n_boot, n))
                ma, mb = xa[idx].mean(axis=1), xb[idx].mean(axis=1)
                draws = ((ma - mb) / mb).mean(axis=1)
                lo, hi = np.quantile(draws, [(1 - level) / 2, 1 - (1 - level) / 2])
            rows.append({"contrast": f"{a} - {b}", "items": n, "layers": len(cols), "rel_change": est,
                         "ci_low": float(lo), "ci_high": float(hi)})
        return pd.DataFrame(rows)

    def group_contrast(self, *, condition: str = "plain", n_boot: int = 2000, level: float = 0.95,
                       seed: int = 0) -> dict:
        """OCW minus CC under one prompt as one number: the relative difference of the mean
        displacement over layers >= 1, mean over layers of (mean_OCW - mean_CC) / mean_CC.

        Each group is resampled on its own (percentile bootstrap over its items). Returns a
        dict: condition, n_cc, n_ocw, rel_diff, ci_low, ci_high (NaN without both groups).
        """
        t = self.probe[(self.probe["layer"] >= 1) & (self.probe["condition"] == condition)]
        wide = {g: t[t["group"] == g].pivot_table(index="prompt_id", columns="layer",
                                                  values="displacement") for g in ("CC", "OCW")}
        cols = wide["CC"].columns.intersection(wide["OCW"].columns)
        xc, xo = wide["CC"][cols].to_numpy(), wide["OCW"][cols].to_numpy()
        out = {"condition": condition, "n_cc": len(xc), "n_ocw": len(xo), "rel_diff": np.nan,
               "ci_low": np.nan, "ci_high": np.nan}
        if len(xc) < 2 or len(xo) < 2 or not len(cols):
            return out
        rng = np.random.default_rng(seed)
        mc = xc[rng.integers(0, len(xc), size=(n_boot, len(xc)))].mean(axis=1)
        mo = xo[rng.integers(0, len(xo), size=(n_boot, len(xo)))].mean(axis=1)
        draws = ((mo - mc) / mc).mean(axis=1)
        lo, hi = np.quantile(draws, [(1 - level) / 2, 1 - (1 - level) / 2])
        out.update(rel_diff=float(((xo.mean(0) - xc.mean(0)) / xc.mean(0)).mean()),
                   ci_low=float(lo), ci_high=float(hi))
        return out

    def sweep_spread(self) -> float:
        """How far displacement / sigma varies across the sweep's sigmas (max/min - 1, layers >= 1).

        Near 0 means the response is linear in the noise over the swept range."""
        sw = self.sweep[self.sweep["layer"] >= 1]
        ratio = (sw["displacement"] / sw["sigma"]).groupby(sw["sigma"]).mean()
        return float(ratio.max() / ratio.min() - 1)

    def sweep_linearity(self, *, n_boot: int = 2000, ci: float = 0.95, seed: int = 0) -> pd.DataFrame:
        """:meth:`sweep_spread` with a percentile bootstrap over the swept prompts, and its n.

        One row: estimate, ci_low, ci_high, prompts, sigmas. Each prompt has every sigma and
        the same layers, so the per-sigma mean over (prompt, layer) is the mean over prompts
        of the per-prompt means, and resampling prompts resamples whole rows of that table.
        With one prompt there is no interval (NaN).
        """
        from metacog.stats.intervals import bootstrap_items

        sw = self.sweep[self.sweep["layer"] >= 1]
        per = (sw["displacement"] / sw["sigma"]).groupby([sw["prompt_id"], sw["sigma"]]).mean().unstack()
        per = per.dropna()
        if per.shape[1] < 2 or per.empty:
            return pd.DataFrame([{"estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                                  "prompts": len(per), "sigmas": per.shape[1]}])

        def spread(stack):
            m = stack.mean(axis=-2)
            return m.max(axis=-1) / m.min(axis=-1) - 1

        est = float(spread(per.to_numpy()[None])[0])
        lo = hi = np.nan
        if len(per) >= 2:
            b = bootstrap_items(spread, per, n_boot=n_boot, ci=ci, seed=seed)
            lo, hi = float(b.ci_low[0]), float(b.ci_high[0])
        return pd.DataFrame([{"estimate": est, "ci_low": lo, "ci_high": hi, "prompts": len(per),
                              "sigmas": per.shape[1]}])


def network(model: str) -> str:
    """The local model a probed answerer runs on: 'local/qwen2.5-coder-1.5b · P(Yes)' ->
    'qwen2.5-coder-1.5b'."""
    return str(model).split("/")[-1].removesuffix(P_YES_LABEL)


def select_items(log: pd.DataFrame, answerer: str, n_per_group: int = PAPER_GROUP_ITEMS, seed: int = 0,
                 threshold: float = HIGH_CONFIDENCE) -> pd.DataFrame:
    """Up to ``n_per_group`` CC and OCW items of ``answerer``'s C0 answers in ``log``, drawn with
    ``seed``: the frozen audit log the probe inherits its groups from.

    One row per item: item_id, group, confidence, correct, ``draw`` (0, 1, ... in the order the
    items were drawn within their group, so the first k of a larger draw are the draw of k) and
    ``answerer``. CC first, then OCW, each in draw order.
    """
    own = log[(log["model"] == answerer) & (log["probe"] == "c0")]
    if own.empty:
        raise ValueError(f"select_items: no C0 rows for answerer {answerer!r} in the group log; "
                         f"answerers in it: {sorted(log['model'].unique())}.")
    groups = confidence_groups(own, threshold=threshold, probe="c0")
    shuffled = groups.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    shuffled["draw"] = shuffled.groupby("group").cumcount()
    picked = shuffled[shuffled["draw"] < n_per_group]
    order = picked["group"].map({"CC": 0, "OCW": 1})
    return (picked.assign(_o=order).sort_values(["_o", "draw"]).drop(columns="_o")
            .assign(answerer=answerer).reset_index(drop=True))


def chunks(groups: pd.DataFrame, n_per_group: int | None = None, size: int = CHUNK) -> list[list[str]]:
    """The item ids of ``groups`` in the batches the probe records (one cache file each): per
    group, its first ``n_per_group`` items in draw order, ``size`` at a time. A killed recording
    redoes at most one batch, and a batch is the same for any larger draw."""
    out = []
    for _, g in groups.groupby("group", sort=True):
        ids = list(g.sort_values("draw")["item_id"])[:n_per_group]
        out += [ids[i:i + size] for i in range(0, len(ids), size)]
    return out


def _probe_batches(name: str, prompts: pd.Series, batches, sigma: float, **kw) -> pd.DataFrame:
    parts = [probe_cached(name, prompts.loc[b], sigma, **kw) for b in batches if b]
    return pd.concat(parts, ignore_index=True)


def study(model: str, groups: pd.DataFrame, items, *, n_sweep: int = PAPER_GROUP_ITEMS,
          sigma: float = SIGMA, n_trials: int = N_TRIALS, seed: int = 0,
          sweep_sigmas=SWEEP_SIGMAS, compute: bool = False, cache=None) -> Study:
    """Run (``compute=True``) or replay (``compute=False``) the study for one local model.

    ``model`` is a panel name such as 'smollm2-135m' (or a P(Yes) answerer, probed on its
    network); ``groups`` the CC / OCW items of :func:`select_items` — the same for every probed
    model, so every model reads the same item texts; ``items`` the audit items (a list of Items
    or a frame). The sigma sweep runs the plain prompt on the first ``n_sweep`` items of each
    group; its row at ``sigma`` is the plain condition's own (same prompts, same noise).
    """
    ids = list(groups["item_id"])
    frame = items if isinstance(items, pd.DataFrame) else pd.DataFrame(
        [{"item_id": i.item_id, "question": i.question} for i in items])
    chosen = frame[frame["item_id"].astype(str).isin(ids)][["item_id", "question"]]
    absent = sorted(set(ids) - set(chosen["item_id"].astype(str)))
    if absent:
        raise ValueError(f"items: no question for item(s) {absent[:3]} of the probe's groups; pass the "
                         f"audit items the group log was asked (metacog.benchmarks.audit.load_frame()).")
    name = network(model)
    conditions = {
        "plain": build_prompts(chosen, "c0").loc[ids],
        "self_critique": build_prompts(chosen, "c2").loc[ids],
        "length_control": length_control(chosen, "c0", "c2").loc[ids],
    }
    kw = dict(n_trials=n_trials, seed=seed, compute=compute, cache=cache)
    batches = chunks(groups)
    probe = pd.concat([_probe_batches(name, p, batches, sigma, **kw).assign(condition=c)
                       for c, p in conditions.items()], ignore_index=True)
    probe = probe.merge(groups[["item_id", "group"]], left_on="prompt_id", right_on="item_id",
                        how="left").drop(columns="item_id")
    swept = chunks(groups, n_sweep)
    keep = {i for b in swept for i in b}
    parts = []
    for s in sweep_sigmas:
        if float(s) == float(sigma):
            plain = probe[(probe["condition"] == "plain") & probe["prompt_id"].isin(keep)]
            parts.append(plain.drop(columns=["condition", "group"]))
        else:
            parts.append(_probe_batches(name, conditions["plain"], swept, s, **kw))
    return Study(groups=groups, probe=probe, sweep=pd.concat(parts, ignore_index=True))
