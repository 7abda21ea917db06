"""The project's binary factual audit set: 534 yes/no items in 11 domains.

Written for this project in the spirit of the frozen audit set of Okutomi's
"Stable miscalibration" paper (532 short binary factual items, 11 domains):
stable, well-established facts only, roughly balanced yes/no within every
domain, one justification line per item. ``data/audit/README.md`` says how it
was written. The one canonical copy ships inside the package, at
``metacog/benchmarks/data/audit_items.csv``, so an installed package has it.

- :func:`load_frame` reads and validates the whole set as a DataFrame.
- :func:`load_items` returns :class:`metacog.tidy.items.Item` objects, optionally a
  deterministic subset stratified by domain and gold label.
- :func:`domain_counts` tabulates items per domain and label.

A malformed file raises a ValueError naming the file, the line and the fix.
"""

from __future__ import annotations

import csv
import functools
import hashlib
from pathlib import Path

import pandas as pd

from metacog.tidy.items import Item

try:  # the data layer's error type, so callers can catch one class for every bad data file
    from metacog.data.files import DataFileError
except ImportError:  # pragma: no cover - only when the data layer is absent
    class DataFileError(ValueError):
        """A data file is malformed; the message names the file, the line and the fix."""


#: The canonical audit file (package data).
AUDIT_CSV = Path(__file__).resolve().parent / "data" / "audit_items.csv"

BENCHMARK = "audit"

#: Columns every row must fill.
REQUIRED = ("item_id", "domain", "question", "gold", "justification")
#: Optional column; empty or one of DIFFICULTIES.
OPTIONAL = ("difficulty",)
LABELS = ("yes", "no")
DIFFICULTIES = ("easy", "medium", "hard")

#: The 11 domains of the shipped set, in the order the paper lists them.
DOMAINS = (
    "medicine_epidemiology",
    "social_statistics",
    "geography_travel",
    "cultural_industries",
    "development_regions",
    "entertainment",
    "literature_media",
    "macro_indices",
    "history_diplomacy",
    "sport",
    "technical_standards",
)


def _norm_question(text: str) -> str:
    return " ".join(text.lower().split())


def _read(path: Path) -> pd.DataFrame:
    """Parse and validate one audit CSV; errors name the file and the line."""
    if not path.is_file():
        raise FileNotFoundError(f"Audit set: file {path} does not exist.")
    rows: list[dict] = []
    seen_ids: dict[str, int] = {}
    seen_questions: dict[str, int] = {}
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        header = reader.fieldnames or []
        missing = [c for c in REQUIRED if c not in header]
        if missing:
            raise DataFileError(
                f"{path}, line 1: the header lacks column(s) {missing}; "
                f"it must name {list(REQUIRED)} (optionally {list(OPTIONAL)})."
            )
        for row in reader:
            line = reader.line_num  # physical line where the record ends (its only line, normally)
            where = f"{path}, line {line}"
            if None in row:
                raise DataFileError(
                    f"{where}: {len(header) + len(row[None])} fields for {len(header)} columns; "
                    "quote fields that contain commas."
                )
            empty = [c for c in REQUIRED if row.get(c) is None or not row[c].strip()]
            if empty:
                raise DataFileError(f"{where}: empty or missing {empty}; every row must fill {list(REQUIRED)}.")
            rec = {c: row[c].strip() for c in REQUIRED}
            gold = rec["gold"].lower()
            if gold not in LABELS:
                raise DataFileError(f"{where}: gold is {rec['gold']!r}; it must be 'yes' or 'no'.")
            rec["gold"] = gold
            difficulty = (row.get("difficulty") or "").strip().lower()
            if difficulty and difficulty not in DIFFICULTIES:
                raise DataFileError(
                    f"{where}: difficulty is {row['difficulty']!r}; use one of {list(DIFFICULTIES)} or leave it empty."
                )
            rec["difficulty"] = difficulty or None
            if rec["item_id"] in seen_ids:
                raise DataFileError(
                    f"{where}: item_id {rec['item_id']!r} already used on line {seen_ids[rec['item_id']]}; ids must be unique."
                )
            q = _norm_question(rec["question"])
            if q in seen_questions:
                raise DataFileError(
                    f"{where}: the question repeats the one on line {seen_questions[q]}; drop or reword it."
                )
            seen_ids[rec["item_id"]] = line
            seen_questions[q] = line
            rows.append(rec)
    if not rows:
        raise DataFileError(f"{path}: no items after the header.")
    return pd.DataFrame(rows, columns=[*REQUIRED, "difficulty"])


@functools.lru_cache(maxsize=8)
def _cached(path: str, mtime_ns: int, size: int) -> pd.DataFrame:
    return _read(Path(path))


def load_frame(path: str | Path | None = None) -> pd.DataFrame:
    """The whole audit set, one row per item.

    Columns: item_id, domain, question, gold ('yes'/'no'), justification,
    difficulty ('easy'/'medium'/'hard' or None). ``path`` overrides the
    shipped file (for tests or an edited copy). Returns a fresh copy.
    """
    p = Path(path) if path is not None else AUDIT_CSV
    if not p.is_file():
        raise FileNotFoundError(f"Audit set: file {p} does not exist.")
    st = p.stat()
    return _cached(str(p.resolve()), st.st_mtime_ns, st.st_size).copy()


def _to_item(row: dict) -> Item:
    difficulty = row["difficulty"]
    return Item(
        item_id=row["item_id"],
        benchmark=BENCHMARK,
        question=row["question"],
        gold=row["gold"],
        context=None,
        context_kind="none",
        domain=row["domain"],
        meta={"justification": row["justification"], "difficulty": None if pd.isna(difficulty) else difficulty},
    )


def _rank(seed: int, item_id: str) -> str:
    return hashlib.sha256(f"audit:{seed}:{item_id}".encode()).hexdigest()


def _even_split(n: int, caps: dict, order: list) -> dict:
    """Share ``n`` as evenly as capacities allow; leftovers go to keys early in ``order``."""
    alloc = {k: 0 for k in order}
    active = [k for k in order if caps[k] > 0]
    remaining = n
    while remaining > 0 and active:
        share = remaining // len(active)
        if share == 0:
            for k in active[:remaining]:
                alloc[k] += 1
            break
        for k in active:
            take = min(share, caps[k] - alloc[k])
            alloc[k] += take
            remaining -= take
        active = [k for k in active if alloc[k] < caps[k]]
    return alloc


def allocate(frame: pd.DataFrame, n_items: int, seed: int = 0) -> pd.DataFrame:
    """How many items to draw per domain and label for a subset of ``n_items``.

    Domains get equal shares (a domain with too few items passes its surplus
    on); within a domain the share is split evenly between 'yes' and 'no'.
    Odd leftovers go to seed-ordered domains, and the odd item of a domain
    alternates between labels so the subset's yes/no totals differ by at most
    one when capacities allow. Returns a tidy table domain, gold, available, n.
    """
    caps = frame.groupby(["domain", "gold"]).size()
    domains = sorted(frame["domain"].unique())
    order = sorted(domains, key=lambda d: _rank(seed, d))
    per_domain = _even_split(n_items, {d: int(caps[d].sum()) for d in domains}, order)
    first = LABELS[int(_rank(seed, "label"), 16) % 2]
    rows, odd = [], 0
    for d in order:
        labels = [first, *[lab for lab in LABELS if lab != first]]
        if per_domain[d] % 2:
            labels = labels if odd % 2 == 0 else labels[::-1]
            odd += 1
        split = _even_split(per_domain[d], {lab: int(caps[d].get(lab, 0)) for lab in LABELS}, labels)
        rows += [{"domain": d, "gold": lab, "available": int(caps[d].get(lab, 0)), "n": split[lab]}
                 for lab in LABELS]
    return pd.DataFrame(rows).sort_values(["domain", "gold"], ignore_index=True)


def subset_frame(frame: pd.DataFrame, n_items: int, seed: int = 0) -> pd.DataFrame:
    """The rows of a stratified subset of ``frame`` (see :func:`allocate`), in file order.

    Within each domain x label cell, items are ranked by sha256 of seed and
    item_id, so the same seed gives the same subset on any machine.
    """
    if isinstance(n_items, bool) or not isinstance(n_items, int) or n_items < 1:
        raise ValueError(f"Audit set: n_items must be a positive int (or None for all), got {n_items!r}.")
    if n_items >= len(frame):
        return frame.reset_index(drop=True)
    quota = allocate(frame, n_items, seed).set_index(["domain", "gold"])["n"]
    keep = []
    for (d, lab), cell in frame.groupby(["domain", "gold"]):
        ranked = sorted(cell.index, key=lambda i: _rank(seed, frame.at[i, "item_id"]))
        keep += ranked[: int(quota[(d, lab)])]
    return frame.loc[sorted(keep)].reset_index(drop=True)


def load_items(n_items: int | None = None, seed: int = 0, path: str | Path | None = None) -> list[Item]:
    """The audit items as :class:`Item` (benchmark 'audit', gold 'yes'/'no', no context).

    With ``n_items``, a deterministic subset balanced across domains and, within
    each domain, across labels; same ``seed`` -> same items. ``n_items`` at or
    above the set size returns everything.
    """
    frame = load_frame(path)
    if n_items is not None:
        frame = subset_frame(frame, n_items, seed)
    return [_to_item(row) for row in frame.to_dict("records")]


def domain_counts(frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """Items per domain: columns domain, n, yes, no, share_yes (plus a 'total' row)."""
    frame = load_frame() if frame is None else frame
    tab = pd.crosstab(frame["domain"], frame["gold"]).reindex(columns=list(LABELS), fill_value=0)
    tab.loc["total"] = tab.sum()
    tab.insert(0, "n", tab["yes"] + tab["no"])
    tab["share_yes"] = tab["yes"] / tab["n"]
    return tab.reset_index().rename_axis(columns=None)
