"""Speed of metacog.stats against R psych on the same data (prints figures; not a test).

    .venv/bin/python speed/bench_stats.py [--no-r] [--skip-large]

Data: one-factor probit ratings, models as columns, items as rows, with ~3% missing values.
When Rscript with psych is installed, the same data are written to a temporary CSV and timed
inside R with system.time; the R results are read back and compared with ours.
Goals: >= 20x faster than psych and identical within 1e-4; pairwise_calibration on
20 models x 1000 items < 0.2 s.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from metacog.stats import factor_analysis, pairwise_calibration, parallel_analysis, tetrachoric

R_SCRIPT = r"""
suppressMessages(library(psych))
args <- commandArgs(trailingOnly = TRUE)
x <- as.matrix(read.csv(args[1], row.names = 1))
what <- args[2]; out <- args[3]
t <- system.time({
  res <- suppressWarnings(suppressMessages(switch(what,
    tet = tetrachoric(x)$rho,
    fa = unclass(fa(x, nfactors = 1, fm = "minres", cor = "tet")$loadings),
    par = { set.seed(1); fa.parallel(x, cor = "tet", n.iter = 20, plot = FALSE)$fa.values })))
})[["elapsed"]]
write.csv(as.matrix(res), out)
cat(t, "\n")
"""


def simulate(n_items, n_models, seed=0, miss=0.03):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_items)
    lam = rng.uniform(0.4, 0.9, n_models)
    tau = rng.uniform(-1.5, 1.5, n_models)
    z = lam * theta[:, None] + np.sqrt(1 - lam**2) * rng.normal(size=(n_items, n_models))
    X = (z > tau).astype(float)
    X[rng.uniform(size=X.shape) < miss] = np.nan
    return pd.DataFrame(X, index=[f"i{i}" for i in range(n_items)],
                        columns=[f"m{j:03d}" for j in range(n_models)])


def best_of(f, repeat=3):
    times = []
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = f()
        times.append(time.perf_counter() - t)
    return min(times), out


def run_r(X, what, tmp):
    data = Path(tmp) / f"x_{what}_{X.shape[1]}.csv"
    res = Path(tmp) / f"r_{what}_{X.shape[1]}.csv"
    X.to_csv(data, na_rep="NA")
    script = Path(tmp) / "bench.R"
    script.write_text(R_SCRIPT)
    p = subprocess.run(["Rscript", str(script), str(data), what, str(res)], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(p.stderr[-2000:])
    return float(p.stdout.strip().split()[-1]), pd.read_csv(res, index_col=0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--no-r", action="store_true", help="skip the R comparison")
    ap.add_argument("--skip-large", action="store_true", help="skip 100 models x 2000 items")
    args = ap.parse_args()
    have_r = not args.no_r and shutil.which("Rscript") is not None
    warnings.simplefilter("ignore")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("tetrachoric", "tet", 1000, 20), ("tetrachoric", "tet", 2000, 100),
                 ("fa(cor='tet')", "fa", 1000, 20), ("fa.parallel 20 iter", "par", 1000, 20)]
        for label, what, n, m in cases:
            if args.skip_large and m == 100:
                continue
            X = simulate(n, m)
            if what == "tet":
                t_py, res = best_of(lambda: tetrachoric(X))
                ours = res.rho.to_numpy()
            elif what == "fa":
                t_py, res = best_of(lambda: factor_analysis(tetrachoric(X), 1))
                ours = res.loadings.to_numpy()
            else:
                t_py, res = best_of(lambda: parallel_analysis(X, n_iter=20, reference="resampled",
                                                              rule="classic"), repeat=1)
                ours = res.table.observed_fa.to_numpy()[:, None]
            row = {"task": label, "shape": f"{m} models x {n} items", "python_s": t_py}
            if have_r:
                t_r, ref = run_r(X, what, tmp)
                row["psych_s"] = t_r
                row["speedup"] = t_r / t_py
                row["max_abs_diff"] = float(np.abs(ours - ref.to_numpy()).max())
            rows.append(row)
            print(pd.DataFrame([row]).to_string(index=False, header=len(rows) == 1), flush=True)
    C = simulate(1000, 20, seed=1, miss=0.0)
    Y = simulate(1000, 20, seed=2, miss=0.0)
    pairwise_calibration(C, Y, control=False)
    t_plain, _ = best_of(lambda: pairwise_calibration(C, Y, control=False), repeat=5)
    t_ctl, _ = best_of(lambda: pairwise_calibration(C, Y), repeat=3)
    print()
    print(f"pairwise_calibration 20 models x 1000 items, exact p-values: {t_plain:.4f} s "
          f"(goal < 0.2 s); with the difficulty control: {t_ctl:.4f} s")
    print()
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
