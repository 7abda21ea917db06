"""The weighted 2x2 tables against counting item by item in plain Python."""

import numpy as np
import pytest

from metacog.stats.tables import BinaryTables, cross_counts, pair_counts


def counted(a, b, w):
    """(n00, n01, n10, n11) of two 0/1/NaN columns, each item adding its weight."""
    cells = [0.0, 0.0, 0.0, 0.0]
    for x, y, wt in zip(a, b, w):
        if np.isnan(x) or np.isnan(y):
            continue
        cells[int(2 * x + y)] += wt
    return cells


def data(seed, gaps):
    rng = np.random.default_rng(seed)
    X = (rng.random((40, 4)) < 0.55).astype(float)
    Y = (rng.random((40, 3)) < 0.4).astype(float)
    if gaps:
        X[rng.random(X.shape) < 0.15] = np.nan
        Y[rng.random(Y.shape) < 0.15] = np.nan
    return X, Y, rng


@pytest.mark.parametrize("gaps", [False, True])
@pytest.mark.parametrize("weights", ["none", "counts", "real"])
def test_pair_and_cross_counts_equal_counting_item_by_item(gaps, weights):
    X, Y, rng = data(7, gaps)
    w = {"none": None, "counts": rng.integers(0, 4, 40).astype(float), "real": rng.random(40)}[weights]
    each = np.ones(40) if w is None else w
    tables = pair_counts(X, w)
    for i in range(X.shape[1]):
        for j in range(X.shape[1]):
            assert [t[i, j] for t in tables] == pytest.approx(counted(X[:, i], X[:, j], each), abs=1e-9)
    n, a, b, n11 = cross_counts(X, Y, w)
    for i in range(X.shape[1]):
        for j in range(Y.shape[1]):
            n00, n01, n10, m11 = counted(X[:, i], Y[:, j], each)
            want = (n00 + n01 + n10 + m11, n10 + m11, n01 + m11, m11)
            assert (n[i, j], a[i, j], b[i, j], n11[i, j]) == pytest.approx(want, abs=1e-9)


def test_prepared_tables_are_reused_and_bad_weights_are_named():
    X, _, _ = data(1, True)
    T = BinaryTables(X)
    assert [t.tolist() for t in pair_counts(T)] == [t.tolist() for t in pair_counts(X)]
    with pytest.raises(ValueError, match="one weight per item"):
        pair_counts(T, np.ones(3))
    with pytest.raises(ValueError, match="items x columns"):
        BinaryTables(np.ones(3))


@pytest.mark.parametrize("gaps", [False, True])
def test_stacked_counts_equal_counting_item_by_item_for_every_resample(gaps):
    from metacog.stats.tables import cross_counts_stack, pair_counts_stack

    X, Y, rng = data(3, gaps)
    W = rng.integers(0, 4, (5, 40)).astype(float)
    pairs, cross = pair_counts_stack(X, W), cross_counts_stack(X, Y, W)
    for r, w in enumerate(W):
        for i in range(X.shape[1]):
            for j in range(X.shape[1]):
                assert [t[r, i, j] for t in pairs] == counted(X[:, i], X[:, j], w)  # exact
            for j in range(Y.shape[1]):
                n00, n01, n10, m11 = counted(X[:, i], Y[:, j], w)
                assert [t[r, i, j] for t in cross] == [n00 + n01 + n10 + m11, n10 + m11, n01 + m11, m11]
        # and the same numbers as the one-weighting functions, bit for bit
        for got, want in zip(cross, cross_counts(X, Y, w)):
            assert np.array_equal(got[r], want)
