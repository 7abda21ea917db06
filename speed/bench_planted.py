"""The planted panel at scale: times and verdicts. Prints figures; asserts nothing.

For each planted kappa (default 0: shared difficulty only, and 1: a strong individual signal), a
:class:`tests.planted.PlantedPanel` of ``--models`` models is served on 127.0.0.1
(:class:`tests.planted.PlantedServer`, a thread of this process) and asked, through
:func:`metacog.elicit.run` with a fresh cache, paper 1's probes on ``--items`` items of each
benchmark (LegalBench: prospective and the attempt without context, as in the paper) and
c0/c1/c2 on ``--audit-items`` audit items. Printed per condition:

- the time to build the panel (loading items, one ``population`` draw per benchmark);
- the calls, the time and the rate of each ``elicit.run``;
- the time to check the planted attempts with the project's grader (:meth:`PlantedPanel.plantable`)
  and the comparison of every row with the planted truth (mismatches on plantable, unambiguous
  items, and how many items are ambiguous or not plantable, per benchmark);
- the chapters' own verdicts on self against other (pairwise, power; ``--chapters`` adds
  rank_one) by :func:`metacog.pages.findings.collect.collect` on the run's parquet file, with each
  chapter's time.

Usage: python speed/bench_planted.py [--models 10] [--items 1000] [--kappas 0,1]
    [--benchmarks squad,mmlu_pro,legalbench,math,omni_math] [--audit-items 534]
    [--chapters pairwise,power] [--concurrency 16] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

PAPER1 = ["prospective", "answer_no_context", "answer", "counterfactual"]
PROBES_OF = {"legalbench": ["prospective", "answer_no_context"]}
PARAMS = {"cuts": {}, "alpha": 0.05, "unanimous_rule": "either", "n_permutations": 999, "n_boot": 1000,
          "seed": 0, "power_target": 0.8, "n_sims": 100, "n_sims_factor": 30, "n_perm": 199, "n_null": 200,
          "kappa_max": 1.0, "kappa_tol": 0.01, "max_items": 2000, "margin": 0.02, "pa_iterations": 20,
          "pa_reference": "resampled"}


def _ask(panel, server, items, probes, cache, concurrency):
    import metacog.elicit as me

    t = time.perf_counter()
    df = me.run(items, models=[f"openai/{m}" for m in panel.models], probes=probes, api_base=server.base_url,
                cache=cache, progress=False, concurrency=concurrency)
    dt = time.perf_counter() - t
    calls = df.attrs["counts"]["done"]
    print(f"  elicit.run {','.join(probes)} on {len(items)} items: {calls} calls in {dt:.1f} s "
          f"({calls / dt:.0f} calls/s), {int((df['parse_status'] != 'ok').sum())} not ok", flush=True)
    return df


def _compare(panel, rows, bench, probes):
    import numpy as np

    rows = rows[rows["benchmark"] == bench]
    truth = panel.truth(bench, list(dict.fromkeys(rows["item_id"])), probes=probes)
    m = rows.merge(truth, on=["model", "benchmark", "item_id", "probe"], how="outer", suffixes=("", "_t"),
                   indicator=True)
    amb = set(truth.loc[truth["ambiguous"], "item_id"])
    unmatched = int(((m["_merge"] != "both") & ~m["item_id"].isin(amb)).sum())
    m = m[m["_merge"] == "both"]
    sure = m[m["plantable"].astype(bool) & ~m["ambiguous"].astype(bool)]

    def differ(a, b):
        a, b = a.astype(float).to_numpy(), b.astype(float).to_numpy()
        return int((~((a == b) | (np.isnan(a) & np.isnan(b)))).sum())

    bad = sure[(sure["correct"].astype(float).fillna(-1) != sure["correct_t"].astype(float).fillna(-1))]
    for r in bad.head(3).itertuples():
        print(f"    differs: {r.model} {r.item_id} {r.probe}: correct {r.correct} planted {r.correct_t}; "
              f"reply {str(r.raw_text)[-60:]!r}", flush=True)
    per_item = truth.drop_duplicates("item_id")
    print(f"  {bench}: {len(m)} rows, {unmatched} of unambiguous items without a planted row; on {sure['item_id'].nunique()} plantable "
          f"unambiguous items {differ(sure['correct'], sure['correct_t'])} correct and "
          f"{differ(sure['confidence'], sure['confidence_t'])} confidence values differ from the plant; "
          f"{int(per_item['ambiguous'].sum())} ambiguous, {int((~per_item['plantable'].astype(bool)).sum())} "
          f"not plantable", flush=True)


def _verdicts(path, chapters):
    from metacog.pages.findings.collect import collect

    for ch in chapters:
        t = time.perf_counter()
        try:
            found = collect({ch: "p"}, {"p": {**PARAMS, "sources": [str(path)]}})
        except Exception as exc:  # noqa: BLE001 - a chapter failing on this panel is a figure too
            print(f"  {ch} failed after {time.perf_counter() - t:.1f} s: {type(exc).__name__}: {exc}", flush=True)
            continue
        dt = time.perf_counter() - t
        for f in found:
            v = f.verdict
            if ch == "rank_one" or "own correctness better" in v.claim:
                est = "" if v.estimate is None else f" {v.estimate:.3f} [{v.ci_low:.3f}, {v.ci_high:.3f}]"
                print(f"  {ch} ({dt:.1f} s): {v.status}{est} | {v.claim}", flush=True)


def condition(args, kappa: float, tmp: Path) -> None:
    from planted import PlantedPanel, PlantedServer

    from metacog.benchmarks import load_items

    benches = [b for b in args.benchmarks.split(",") if b]
    print(f"\nkappa = {kappa}: {args.models} models x {args.items} items x {len(benches)} benchmarks "
          f"+ {args.audit_items} audit items", flush=True)
    t = time.perf_counter()
    panel = PlantedPanel(args.models, kappa, args.seed, benches + ["audit"])
    print(f"  panel built in {time.perf_counter() - t:.1f} s", flush=True)
    items = {b: load_items(b, n_items=args.items, seed=args.seed) for b in benches}
    audit = load_items("audit", n_items=args.audit_items, seed=args.seed)
    with PlantedServer(panel) as srv:
        frames = []
        t0 = time.perf_counter()
        for probes in ([PAPER1] + [PROBES_OF[b] for b in benches if b in PROBES_OF]):
            its = [it for b in benches if PROBES_OF.get(b, PAPER1) == probes for it in items[b]]
            frames.append(_ask(panel, srv, its, probes, tmp / "cache", args.concurrency))
        frames.append(_ask(panel, srv, audit, ["c0", "c1", "c2"], tmp / "cache", args.concurrency))
        print(f"  all calls: {panel.requests} requests served in {time.perf_counter() - t0:.1f} s", flush=True)
    import pandas as pd

    rows = pd.concat(frames, ignore_index=True)
    t = time.perf_counter()
    for b in benches:
        _compare(panel, rows, b, PROBES_OF.get(b, PAPER1))
    _compare(panel, rows, "audit", ["c0", "c1", "c2"])
    print(f"  checked against the plant (grading the planted attempts included) in "
          f"{time.perf_counter() - t:.1f} s", flush=True)
    path = tmp / f"planted_kappa{kappa:g}.parquet"
    rows.to_parquet(path)
    _verdicts(path, [c for c in args.chapters.split(",") if c])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", type=int, default=10)
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--kappas", default="0,1")
    ap.add_argument("--benchmarks", default="squad,mmlu_pro,legalbench,math,omni_math")
    ap.add_argument("--audit-items", type=int, default=534)
    ap.add_argument("--chapters", default="pairwise,power")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    for k in [float(x) for x in args.kappas.split(",") if x]:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            condition(args, k, Path(tmp))
            print(f"  condition total {time.perf_counter() - t:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
