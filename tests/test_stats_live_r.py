"""Fresh random data checked against R psych live (skipped when Rscript + psych are absent).

The committed fixtures pin psych's answers on fixed data; this test draws new designs each
parametrised seed and asks R, so agreement is checked beyond the fixtures.
"""

import shutil
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest

from metacog.stats import factor_analysis, tetrachoric

R_CODE = r"""
suppressMessages(library(psych))
args <- commandArgs(trailingOnly = TRUE)
x <- as.matrix(read.csv(args[1], row.names = 1))
t <- suppressWarnings(suppressMessages(tetrachoric(x)))
write.csv(t$rho, args[2])
f <- suppressWarnings(suppressMessages(fa(x, nfactors = 1, fm = "minres", cor = "tet")))
write.csv(unclass(f$loadings), args[3])
"""


def have_psych():
    if shutil.which("Rscript") is None:
        return False
    p = subprocess.run(["Rscript", "-e", "quit(status = !requireNamespace('psych', quietly = TRUE))"],
                       capture_output=True)
    return p.returncode == 0


pytestmark = [pytest.mark.slow, pytest.mark.skipif(not have_psych(), reason="needs Rscript with psych")]


@pytest.mark.parametrize("seed", range(4))
def test_random_design_matches_psych(seed, tmp_path):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.choice([60, 200, 800]))
    k = int(rng.integers(4, 15))
    lam = rng.uniform(-0.2, 0.95, k)
    tau = rng.uniform(-2.0, 2.0, k)
    theta = rng.normal(size=n)
    z = lam * theta[:, None] + np.sqrt(1 - lam**2) * rng.normal(size=(n, k))
    X = (z > tau).astype(float)
    X[rng.uniform(size=X.shape) < rng.choice([0.0, 0.05, 0.15])] = np.nan
    for j in range(k):  # keep every column non-constant
        col = X[:, j]
        if np.nanstd(col) == 0:
            i = np.flatnonzero(~np.isnan(col))[0]
            X[i, j] = 1 - X[i, j]
    df = pd.DataFrame(X, index=[f"i{i}" for i in range(n)], columns=[f"m{j}" for j in range(k)])
    data, rho_f, fa_f, script = (tmp_path / s for s in ("x.csv", "rho.csv", "fa.csv", "r.R"))
    df.to_csv(data, na_rep="NA")
    script.write_text(R_CODE)
    subprocess.run(["Rscript", str(script), str(data), str(rho_f), str(fa_f)], check=True, capture_output=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tet = tetrachoric(df)
    ref_rho = pd.read_csv(rho_f, index_col=0)
    np.testing.assert_allclose(tet.rho.to_numpy(), ref_rho.to_numpy(), atol=1e-4)
    ref_fa = pd.read_csv(fa_f, index_col=0)
    fa = factor_analysis(tet, 1)
    np.testing.assert_allclose(fa.loadings.to_numpy(), ref_fa.to_numpy(), atol=1e-4)
