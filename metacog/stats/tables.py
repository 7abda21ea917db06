"""Weighted 2x2 tables of binary columns: the one place the book counts them.

Every pairwise statistic of 0/1 data the book computes (tetrachoric correlation, Kendall's
tau-b, which is phi for 0/1 data) depends on the items only through the 2x2 table of each pair
of columns. With item weights ``w`` (1 for the data, bootstrap counts for a resample) each cell
is a product ``A' diag(w) B`` of indicator matrices, so a table of every pair costs a few matrix
products. :class:`BinaryTables` prepares a 0/1/NaN matrix once; :func:`pair_counts` gives the
tables of its columns against each other, :func:`cross_counts` those of two matrices' columns.
Integer weights below 2**24 in total use float32 products, which are exact there.
"""

from __future__ import annotations

import numpy as np

EXACT32 = 2**24  # float32 represents every integer up to this exactly


class BinaryTables:
    """A 0/1/NaN items x k matrix prepared for weighted 2x2 tables: its 1s (``ones``) and where
    it has a value (``seen``) as dense matrices, float32 copies of both for integer weights, and
    its gaps as a sparse matrix (``gaps``; None when nothing is missing).

    >>> T = BinaryTables([[1, 0], [np.nan, 1]])
    >>> T.ones.tolist(), T.seen.tolist(), T.has_gaps
    ([[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 1.0]], True)
    """

    def __init__(self, X):
        X = np.asarray(X, dtype=float)
        if X.ndim != 2:
            raise ValueError(f"BinaryTables: need an items x columns matrix, got shape {X.shape}.")
        missing = np.isnan(X)
        self.n_items, self.k = X.shape
        self.has_gaps = bool(missing.any())
        self.ones = np.ascontiguousarray(np.where(missing, 0.0, X))
        self.seen = (~missing).astype(float)
        self._gaps = None
        self._f32 = None

    @property
    def gaps(self):
        """The gaps as a sparse (csc) matrix, made on first use: only the weighted tables of
        a matrix with itself (:func:`pair_counts`) need it, so a matrix prepared once for
        :func:`cross_counts` (a shuffled draw of a null) never pays for it."""
        from scipy import sparse

        if self._gaps is None and self.has_gaps:
            self._gaps = sparse.csc_matrix((self.seen == 0).astype(float))
        return self._gaps

    def as32(self) -> tuple[np.ndarray, np.ndarray]:
        """(ones, seen) as float32 (made once, on first use)."""
        if self._f32 is None:
            self._f32 = (self.ones.astype(np.float32), self.seen.astype(np.float32))
        return self._f32


def prepared(X) -> BinaryTables:
    """``X`` as :class:`BinaryTables` (unchanged when it already is)."""
    return X if isinstance(X, BinaryTables) else BinaryTables(X)


def exact_in_float32(w: np.ndarray) -> bool:
    """Whether weights ``w`` are integers summing below 2**24, so float32 products count exactly."""
    return bool(w.sum() < EXACT32 and np.array_equal(w, np.round(w)))


def _weights(T: BinaryTables, w) -> np.ndarray:
    w = np.ones(T.n_items) if w is None else np.asarray(w, dtype=float)
    if w.shape != (T.n_items,):
        raise ValueError(f"weights: need one weight per item ({T.n_items}), got shape {w.shape}.")
    return w


def pair_counts(X, w=None) -> tuple:
    """Weighted complete-case 2x2 tables (n00, n01, n10, n11) of every pair of columns of ``X``
    (items x k, 0/1/NaN, or :class:`BinaryTables`) with item weights ``w`` (default 1); each
    k x k, the first index the row variable.

    >>> X = np.array([[1, 1], [1, 0], [0, 0.]])
    >>> [float(t[0, 1]) for t in pair_counts(X, [1, 2, 1])]
    [1.0, 0.0, 2.0, 1.0]
    >>> [float(t[0, 1]) for t in pair_counts(X)]
    [1.0, 0.0, 1.0, 1.0]
    """
    T = prepared(X)
    unit = w is None  # every item weighs 1: the products need no weighted copy
    w = _weights(T, w)
    exact = exact_in_float32(w)
    ones = T.as32()[0] if exact else T.ones
    ones_wt = ones.T if unit else (ones * w.astype(ones.dtype)[:, None]).T
    n11 = (ones_wt @ ones).astype(float)
    ones_w = T.ones.T @ w  # weighted 1s of each column
    if T.has_gaps and exact:
        # integer weights: two more float32 products count the complete cases exactly, faster
        # than building the sparse gap matrix for a matrix used once (a parallel-analysis draw)
        seen = T.as32()[1]
        n1_ = (ones_wt @ seen).astype(float)
        nn = ((seen.T if unit else (seen * w.astype(seen.dtype)[:, None]).T) @ seen).astype(float)
    elif T.gaps is None:
        n1_ = np.broadcast_to(ones_w[:, None], n11.shape)
        nn = w.sum()
    else:
        gw = T.gaps.multiply(w[:, None]).tocsc()  # weighted gaps
        miss_w = np.asarray(gw.sum(axis=0)).ravel()
        # row variable 1 and column variable present = its weighted 1s minus those where j is missing
        n1_ = ones_w[:, None] - np.asarray((gw.T @ T.ones).T)
        nn = w.sum() - miss_w[:, None] - miss_w[None, :] + (gw.T @ T.gaps).toarray()
    n10 = n1_ - n11
    n01 = n1_.T - n11
    n00 = nn - n11 - n10 - n01
    return n00, n01, n10, n11


def cross_counts(A, B, w=None) -> tuple:
    """Margins of the weighted 2x2 tables of every column of ``A`` against every column of ``B``
    (same items), over the items both have: (n, a, b, n11), each ``A.k x B.k`` — ``n`` items in
    common, ``a`` of them 1 in A's column, ``b`` 1 in B's column, ``n11`` 1 in both.

    >>> n, a, b, n11 = cross_counts([[1], [0], [np.nan]], [[1], [1], [0]])
    >>> [float(v[0, 0]) for v in (n, a, b, n11)]
    [2.0, 1.0, 2.0, 1.0]
    """
    A, B = prepared(A), prepared(B)
    if A.n_items != B.n_items:
        raise ValueError(f"cross_counts: the two matrices have {A.n_items} and {B.n_items} items.")
    w = _weights(A, w)
    (a1, aseen), (b1, bseen) = (A.as32(), B.as32()) if exact_in_float32(w) else \
        ((A.ones, A.seen), (B.ones, B.seen))
    ww = w.astype(b1.dtype)[:, None]
    b1w = b1 * ww
    n11 = (a1.T @ b1w).astype(float)
    if B.has_gaps:  # counts over the items both columns have
        bseen_w = bseen * ww
        n, a = (aseen.T @ bseen_w).astype(float), (a1.T @ bseen_w).astype(float)
    else:  # every column of B has every item: A-only sums
        n, a = (A.seen.T @ w)[:, None], (A.ones.T @ w)[:, None]
    b = (aseen.T @ b1w).astype(float) if A.has_gaps else b1w.sum(axis=0, dtype=float)[None, :]
    return np.broadcast_to(n, n11.shape), np.broadcast_to(a, n11.shape), np.broadcast_to(b, n11.shape), n11


#: Items per block of the packed products of :func:`pair_counts_stack` (bounds its memory:
#: block x k(k+1)/2 float32 values).
STACK_BLOCK = 1024


def _gap_columns(T: BinaryTables) -> list:
    """For each column with gaps, (column, the rows where it is missing)."""
    if T.gaps is None:
        return []
    g = T.gaps
    return [(j, g.indices[g.indptr[j]:g.indptr[j + 1]]) for j in range(T.k) if g.indptr[j + 1] > g.indptr[j]]


#: :func:`pair_counts_stack` keeps a matrix's packed pair products (items x k(k+1)/2) between
#: calls, for the next chunk of resamples, when they take at most this many bytes.
PACKED_CACHE_BYTES = 256 * 2**20


def _packed_blocks(T: BinaryTables, exact: bool):
    """(first item, block of packed products ``o_i[j] * o_i[l]`` for j <= l) over blocks of
    :data:`STACK_BLOCK` items; kept on ``T`` when small enough (:data:`PACKED_CACHE_BYTES`)."""
    ones = T.as32()[0] if exact else T.ones
    iu, ju = np.triu_indices(T.k)
    cached = getattr(T, "_packed", None)
    if cached is not None and cached[0] == exact:
        yield from cached[1]
        return
    keep = T.n_items * iu.size * ones.itemsize <= PACKED_CACHE_BYTES
    blocks = []
    for s in range(0, T.n_items, STACK_BLOCK):
        o = ones[s:s + STACK_BLOCK]
        block = o[:, iu] * o[:, ju]
        if keep:
            blocks.append((s, block))
        yield s, block
    if keep:
        T._packed = (exact, blocks)


def pair_counts_stack(X, W) -> tuple:
    """:func:`pair_counts` under every row of item weights ``W`` (b x items) at once: four
    (b x k x k) arrays (n00, n01, n10, n11), equal to ``pair_counts(X, W[r])`` for each r.

    The 1-1 counts of every resample come from one matrix product of ``W`` with the items'
    packed products of column pairs (upper triangle), in blocks of :data:`STACK_BLOCK` items;
    the corrections for gaps from one small product per column with gaps, over the rows it
    misses. Integer weights below 2**24 per row use float32 products, exact there, so the
    counts are the same numbers :func:`pair_counts` gives, not merely close.

    >>> X = np.array([[1, 1], [1, 0], [0, 0.]])
    >>> [float(t[1, 0, 1]) for t in pair_counts_stack(X, [[1, 1, 1], [1, 2, 1]])]
    [1.0, 0.0, 2.0, 1.0]
    """
    T = prepared(X)
    W = np.atleast_2d(np.asarray(W, dtype=float))
    if W.ndim != 2 or W.shape[1] != T.n_items:
        raise ValueError(f"weights: need one weight per item ({T.n_items}) in each row, got shape {W.shape}.")
    b, k = W.shape[0], T.k
    exact = all(exact_in_float32(w) for w in W)
    ones = T.as32()[0] if exact else T.ones
    Wd = W.astype(ones.dtype)
    iu, ju = np.triu_indices(k)
    packed = np.zeros((b, iu.size), dtype=ones.dtype)
    for s, block in _packed_blocks(T, exact):
        packed += Wd[:, s:s + block.shape[0]] @ block
    n11 = np.empty((b, k, k))
    n11[:, iu, ju] = packed
    n11[:, ju, iu] = packed
    ones_w = W @ T.ones  # (b x k) weighted 1s of each column
    n1_ = np.repeat(ones_w[:, :, None], k, axis=2)
    nn = np.broadcast_to(W.sum(axis=1)[:, None, None], (b, k, k)).copy()
    gaps = _gap_columns(T)
    if gaps:
        miss_w = np.zeros((b, k))
        for j, rows in gaps:
            Wj = W[:, rows]
            miss_w[:, j] = Wj.sum(axis=1)
            # row variable l is 1 and column variable j is missing: not a complete case of (l, j)
            n1_[:, :, j] -= Wj @ T.ones[rows]
            # both j and l missing: subtracted twice below, added back once
            nn[:, j, :] += Wj @ (1.0 - T.seen[rows])
        nn -= miss_w[:, :, None] + miss_w[:, None, :]
    n10 = n1_ - n11
    n01 = np.swapaxes(n1_, 1, 2) - n11
    n00 = nn - n11 - n10 - n01
    return n00, n01, n10, n11


def _gap_rows(T: BinaryTables) -> list:
    """For each column of ``T`` with gaps, (column, the rows where it is missing), from the
    dense ``seen`` matrix (no sparse matrix is built)."""
    if not T.has_gaps:
        return []
    miss = T.seen == 0
    return [(j, np.flatnonzero(miss[:, j])) for j in np.flatnonzero(miss.any(axis=0))]


def cross_counts_stack(A, B, W) -> tuple:
    """:func:`cross_counts` under every row of item weights ``W`` (b x items): (n, a, b, n11),
    each b x A.k x B.k, equal to ``cross_counts(A, B, W[r])`` for each r.

    Only ``n11`` needs a full product per resample; the margins are column sums of the weighted
    data corrected, column by column, over the rows where the other matrix has a gap (one small
    product per column with gaps), so with integer weights every count is the same integer.

    >>> n, a, b, n11 = cross_counts_stack([[1], [0], [np.nan]], [[1], [1], [0]], [[1, 1, 1], [2, 0, 1]])
    >>> [float(v[1, 0, 0]) for v in (n, a, b, n11)]
    [2.0, 2.0, 2.0, 2.0]
    """
    A, B = prepared(A), prepared(B)
    if A.n_items != B.n_items:
        raise ValueError(f"cross_counts: the two matrices have {A.n_items} and {B.n_items} items.")
    W = np.atleast_2d(np.asarray(W, dtype=float))
    if W.ndim != 2 or W.shape[1] != A.n_items:
        raise ValueError(f"weights: need one weight per item ({A.n_items}) in each row, got shape {W.shape}.")
    nb, ka, kb = W.shape[0], A.k, B.k
    exact = all(exact_in_float32(w) for w in W)
    a1, b1 = (A.as32()[0], B.as32()[0]) if exact else (A.ones, B.ones)
    n11 = np.empty((nb, ka, kb))
    a1t = np.ascontiguousarray(a1.T)
    for r in range(nb):
        n11[r] = a1t @ (b1 * W[r].astype(b1.dtype)[:, None])
    a = np.repeat((W @ A.ones)[:, :, None], kb, axis=2)
    b = np.repeat((W @ B.ones)[:, None, :], ka, axis=1)
    n = np.broadcast_to(W.sum(axis=1)[:, None, None], (nb, ka, kb)).copy()
    gaps_a, gaps_b = _gap_rows(A), _gap_rows(B)
    miss_a, miss_b = np.zeros((nb, ka)), np.zeros((nb, kb))
    for l, rows in gaps_b:  # column l of B missing: those items leave every pair (j, l)
        Wl = W[:, rows]
        miss_b[:, l] = Wl.sum(axis=1)
        a[:, :, l] -= Wl @ A.ones[rows]
    for j, rows in gaps_a:
        Wj = W[:, rows]
        miss_a[:, j] = Wj.sum(axis=1)
        b[:, j, :] -= Wj @ B.ones[rows]
        n[:, j, :] += Wj @ (1.0 - B.seen[rows])  # missing in both: subtracted twice below
    n -= miss_a[:, :, None] + miss_b[:, None, :]
    return n, a, b, n11
