"""The project's binary factual audit set and its loader."""

import csv
import re
from collections import Counter
from pathlib import Path

import pytest

from metacog.benchmarks import audit
from metacog.tidy.items import Item

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def frame():
    return audit.load_frame()


@pytest.fixture(scope="module")
def rows():
    with audit.AUDIT_CSV.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# --- the set itself ---------------------------------------------------------------------------

def test_eleven_domains_of_about_48(frame):
    assert set(frame["domain"]) == set(audit.DOMAINS)
    assert len(audit.DOMAINS) == 11
    sizes = frame["domain"].value_counts()
    assert 500 <= len(frame) <= 560
    assert sizes.min() >= 44 and sizes.max() <= 54, sizes.to_dict()


def test_labels_balanced_within_every_domain(frame):
    share = frame.assign(y=frame["gold"].eq("yes")).groupby("domain")["y"].mean()
    assert set(frame["gold"]) == {"yes", "no"}
    assert share.between(0.40, 0.60).all(), share.to_dict()


def test_ids_and_questions_unique(frame):
    assert frame["item_id"].is_unique
    norm = frame["question"].str.lower().str.split().str.join(" ")
    assert norm.is_unique, norm[norm.duplicated()].tolist()


def test_ids_name_their_domain(frame):
    prefixes = frame["item_id"].str.extract(r"^audit-([a-z]{3})-(\d{3})$")
    assert prefixes.notna().all().all(), frame["item_id"][prefixes[0].isna()].tolist()
    # one prefix per domain, one domain per prefix
    pairs = set(zip(prefixes[0], frame["domain"]))
    assert len(pairs) == 11 == len({p for p, _ in pairs})


def test_every_row_is_a_filled_yes_no_question(frame, rows):
    assert len(rows) == len(frame)
    assert frame["justification"].str.strip().str.len().gt(10).all()
    assert frame["question"].str.endswith("?").all()
    # time-sensitive wording ("current" alone is fine: current account, electric current)
    assert not frame["question"].str.contains(r"\b(?:currently|latest|today|nowadays|as of|this year)\b",
                                              case=False).any()
    assert {r["difficulty"] for r in rows} == set(audit.DIFFICULTIES)


def test_difficulty_is_spread(frame):
    share = frame["difficulty"].value_counts(normalize=True)
    assert share.min() >= 0.10 and share.max() <= 0.60, share.to_dict()


def test_one_canonical_copy_in_the_package():
    assert audit.AUDIT_CSV.is_file()
    assert audit.AUDIT_CSV.parent.parent == Path(audit.__file__).resolve().parent
    assert not list((ROOT / "data" / "audit").glob("*.csv")), "the CSV lives only in metacog/benchmarks/data/"
    assert "metacog/benchmarks/data/audit_items.csv" in (ROOT / "data" / "audit" / "README.md").read_text()


def test_no_embedded_newlines_so_lines_map_to_rows():
    lines = audit.AUDIT_CSV.read_text(encoding="utf-8").splitlines()
    assert len(lines) == len(audit.load_frame()) + 1


def test_domain_counts_add_up(frame):
    tab = audit.domain_counts(frame).set_index("domain")
    assert tab.loc["total", "n"] == len(frame)
    assert tab.drop("total")["n"].sum() == len(frame)
    assert (tab["yes"] + tab["no"] == tab["n"]).all()


# --- items --------------------------------------------------------------------------------------

def test_items_carry_the_fields(frame):
    items = audit.load_items()
    assert len(items) == len(frame)
    it = items[0]
    assert isinstance(it, Item)
    assert (it.benchmark, it.context, it.context_kind) == ("audit", None, "none")
    assert all(i.gold in ("yes", "no") for i in items)
    assert all(set(i.meta) == {"justification", "difficulty"} and i.meta["justification"] for i in items)
    assert [i.item_id for i in items] == frame["item_id"].tolist()


def test_load_frame_returns_a_copy():
    a = audit.load_frame()
    a.loc[0, "gold"] = "maybe"
    assert audit.load_frame().loc[0, "gold"] in ("yes", "no")


# --- stratified subsets -----------------------------------------------------------------------

@pytest.mark.parametrize("n", [5, 11, 22, 60, 133, 300])
def test_subset_is_deterministic_and_balanced(n):
    a = audit.load_items(n, seed=3)
    b = audit.load_items(n, seed=3)
    assert [i.item_id for i in a] == [i.item_id for i in b]
    assert len(a) == n == len({i.item_id for i in a})
    per_domain = Counter(i.domain for i in a)
    per_label = Counter(i.gold for i in a)
    if n >= 11:
        assert set(per_domain) == set(audit.DOMAINS)
    assert max(per_domain.values()) - min(per_domain.values()) <= 1
    assert abs(per_label["yes"] - per_label["no"]) <= 1
    cells = Counter((i.domain, i.gold) for i in a)
    for d in per_domain:  # within a domain the labels differ by at most one
        assert abs(cells[(d, "yes")] - cells[(d, "no")]) <= 1


def test_subset_depends_on_seed_and_is_drawn_from_the_set(frame):
    a = {i.item_id for i in audit.load_items(60, seed=0)}
    b = {i.item_id for i in audit.load_items(60, seed=1)}
    assert a != b
    assert a <= set(frame["item_id"]) and b <= set(frame["item_id"])


def test_subset_larger_than_a_domain_passes_the_surplus_on(tmp_path, frame):
    small = frame[(frame["domain"] != "sport") | frame.index.isin(frame.index[frame["domain"] == "sport"][:6])]
    path = tmp_path / "small.csv"
    small.to_csv(path, index=False)
    items = audit.load_items(200, seed=0, path=path)
    per_domain = Counter(i.domain for i in items)
    assert len(items) == 200
    assert per_domain["sport"] == 6  # all it has
    others = [v for d, v in per_domain.items() if d != "sport"]
    assert max(others) - min(others) <= 1


def test_subset_at_or_above_the_size_returns_everything(frame):
    assert len(audit.load_items(len(frame))) == len(frame)
    assert len(audit.load_items(10_000)) == len(frame)


@pytest.mark.parametrize("bad", [0, -3, 2.5, "10", True])
def test_subset_size_must_be_a_positive_int(bad):
    with pytest.raises(ValueError, match="n_items"):
        audit.load_items(bad)


# --- malformed files --------------------------------------------------------------------------

def _write(tmp_path, header, body):
    path = tmp_path / "audit_bad.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        w.writerows(body)
    return path


def _copy_with(tmp_path, rows, k, **change):
    header = list(rows[0])
    body = [[r[c] for c in header] for r in rows]
    for col, val in change.items():
        body[k][header.index(col)] = val
    return _write(tmp_path, header, body)


@pytest.mark.parametrize("k, change, what", [
    (40, {"gold": "maybe"}, "gold"),
    (7, {"gold": ""}, "gold"),
    (123, {"justification": "  "}, "justification"),
    (300, {"question": ""}, "question"),
    (200, {"difficulty": "trivial"}, "difficulty"),
])
def test_bad_row_names_file_and_line(tmp_path, rows, k, change, what):
    path = _copy_with(tmp_path, rows, k, **change)
    with pytest.raises(ValueError) as err:
        audit.load_frame(path)
    msg = str(err.value)
    assert str(path) in msg and f"line {k + 2}" in msg and what in msg


def test_duplicate_id_names_both_lines(tmp_path, rows):
    path = _copy_with(tmp_path, rows, 50, item_id=rows[10]["item_id"])
    with pytest.raises(ValueError, match=r"line 52: item_id .* already used on line 12"):
        audit.load_frame(path)


def test_duplicate_question_is_refused(tmp_path, rows):
    path = _copy_with(tmp_path, rows, 99, question=rows[3]["question"].upper())
    with pytest.raises(ValueError, match=r"line 101: the question repeats the one on line 5"):
        audit.load_frame(path)


def test_extra_field_is_refused(tmp_path, rows):
    header = list(rows[0])
    body = [[r[c] for c in header] for r in rows]
    body[17].append("stray, unquoted")
    path = _write(tmp_path, header, body)
    with pytest.raises(ValueError, match=re.escape(f"{path}, line 19")):
        audit.load_frame(path)


def test_missing_column_names_the_header(tmp_path, rows):
    header = [c for c in rows[0] if c != "justification"]
    path = _write(tmp_path, header, [[r[c] for c in header] for r in rows])
    with pytest.raises(ValueError, match=r"line 1: the header lacks column\(s\) \['justification'\]"):
        audit.load_frame(path)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.csv"):
        audit.load_frame(tmp_path / "nope.csv")


def test_difficulty_column_is_optional(tmp_path, rows):
    header = [c for c in rows[0] if c != "difficulty"]
    path = _write(tmp_path, header, [[r[c] for c in header] for r in rows[:30]])
    items = audit.load_items(path=path)
    assert len(items) == 30 and all(i.meta["difficulty"] is None for i in items)
