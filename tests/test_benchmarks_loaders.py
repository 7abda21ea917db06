"""Benchmark loaders: documented sizes, item structure, and errors for malformed files.

The sizes were checked against the files and ../shared/data/SOURCES.md.
"""

from __future__ import annotations

import collections
import json

import pytest

from metacog.benchmarks import APPLICABLE_PROBES, BENCHMARKS, _files, legalbench, load_items, mathsets
from metacog.benchmarks import mmlu_pro, squad, truefalse
from metacog.tidy.items import CONTEXT_KINDS


def _have_mirror() -> bool:
    try:
        _files.dataset_dir("squad")
    except (FileNotFoundError, ValueError):
        return False
    return True


needs_data = pytest.mark.skipif(not _have_mirror(), reason="benchmark data mirror not found "
                                "(set METACOG_DATA_MIRROR)")

SIZES = {
    "squad": 5928,  # SQuAD v2.0 dev: 11,873 questions - 5,945 unanswerable
    "mmlu_pro": 12032,
    "legalbench": 1290,  # 129 tasks x 10 official test rows
    "math": 5000,
    "math500": 500,
    "omni_math": 2821,
    "truthfulqa": 817,
    "strategyqa": 2290,
    "selfaware": 3369,
}


@needs_data
@pytest.mark.parametrize("name,size", sorted(SIZES.items()))
def test_documented_sizes_and_item_structure(name, size):
    items = load_items(name)
    assert len(items) == size
    ids = [it.item_id for it in items]
    assert len(set(ids)) == len(ids), f"{name}: item ids are not unique"
    assert {it.benchmark for it in items} == {name}
    assert all(it.context_kind in CONTEXT_KINDS and it.question.strip() for it in items)
    assert all(it.gold is not None and it.gold != "" for it in items)
    # loading twice gives the same ids in the same order
    assert [it.item_id for it in load_items(name)] == ids


@needs_data
def test_squad_variants_and_golds():
    assert len(squad.load_items(answerable_only=False)) == 11873
    assert len(squad.load_items(version="v1")) == 10570
    allq = squad.load_items(answerable_only=False)
    assert sum(it.meta["is_impossible"] for it in allq) == 5945
    first = squad.load_items()[0]
    assert first.item_id == "5725b33f6a3fe71400b8952d"
    assert first.gold == ["October 1973", "October", "1973"]  # distinct answers, in order
    assert first.context_kind == "passage" and "oil crisis began in October 1973" in first.context
    assert len({it.domain for it in squad.load_items()}) == 35  # articles


@needs_data
def test_mmlu_pro_categories_letters_and_options():
    items = mmlu_pro.load_items()
    cats = collections.Counter(it.domain for it in items)
    assert len(cats) == 14 and cats["math"] == 1351 and cats["history"] == 381
    for it in items:
        opts = it.meta["options"]
        assert 3 <= len(opts) <= 10
        assert opts[it.meta["answer_index"]] == it.meta["answer_text"]
        assert "ABCDEFGHIJ"[it.meta["answer_index"]] == it.gold
        assert it.context.splitlines()[0].startswith("A. ")
    # one upstream row has an answer_index that contradicts its letter; the letter is kept
    odd = [it for it in items if it.meta["index_mismatch"]]
    assert [(it.item_id, it.gold, it.meta["answer_text"]) for it in odd] == [("3983", "C", "N—H")]


@needs_data
def test_legalbench_decomposition():
    items = legalbench.load_items()
    tasks = collections.Counter(it.meta["task"] for it in items)
    assert len(tasks) == 129 and set(tasks.values()) == {10}
    assert APPLICABLE_PROBES["legalbench"] == ("prospective",) == legalbench.APPLICABLE_PROBES
    for it in items:
        assert it.context_kind == "definition" and it.context
        assert it.meta["context_source"] in ("README task description", "README description")
        assert it.meta["probes"] == ("prospective",)
        if it.meta["task_kind"] == "classification":
            assert it.gold in it.meta["labels"], it.item_id
    kinds = collections.Counter(it.meta["task_kind"] for it in items)
    assert kinds == {"classification": 1230, "extraction": 30, "open": 10, "numeric": 10, "multilabel": 10}
    hearsay = [it for it in items if it.meta["task"] == "hearsay"]
    assert hearsay[0].item_id == "hearsay/74"
    assert hearsay[0].question.endswith(
        "Q: On the issue of whether Tom identified the suspect at the scene of the crime, "
        "the fact that he pointed at the defendant. Is there hearsay?\n\nAnswer with one of: No, Yes.")
    assert "Federal Rules of Evidence" in hearsay[0].context
    maud = [it for it in items if it.meta["task"] == "maud_tail_period_length"][0]
    assert "Option C: within 12 months" in maud.question  # the options the letter refers to
    assert maud.meta["labels"] == ["A", "B", "C", "D", "E"]
    scalr = [it for it in items if it.meta["task"] == "scalr"][0]
    assert scalr.meta["context_source"] == "README description"
    assert legalbench.load_items(tasks=["hearsay"]) == hearsay


@needs_data
def test_math_family_golds():
    math_items = {it.item_id: it for it in mathsets.load_math()}
    levels = collections.Counter(it.meta["level"] for it in math_items.values())
    assert levels == {5: 1324, 4: 1214, 3: 1131, 2: 894, 1: 437}
    m500 = mathsets.load_math500()
    # MATH-500 is a subset of MATH, and our \boxed{} extraction agrees with its answers
    assert all(it.item_id in math_items for it in m500)
    assert all(math_items[it.item_id].gold == it.gold for it in m500)
    omni = mathsets.load_omni_math()
    assert collections.Counter(it.domain for it in omni)["Algebra"] == 904
    repaired = [it.item_id for it in omni if it.meta["gold_repaired"]]
    assert repaired == ["omni_math/0183", "omni_math/0682", "omni_math/0710", "omni_math/1469"]
    assert all(it.context_kind == "solution" for it in omni)


@needs_data
def test_truefalse_labels():
    tqa = truefalse.load_truthfulqa()
    assert collections.Counter(it.gold for it in tqa) == {True: 409, False: 408}
    assert len({it.domain for it in tqa}) == 38
    assert tqa[1].gold is False and "Fortune cookies originated in China" in tqa[1].question
    both = truefalse.load_truthfulqa(pairing="both")
    assert len(both) == 1634 and sum(it.gold for it in both) == 817
    sqa = truefalse.load_strategyqa()
    assert collections.Counter(it.gold for it in sqa) == {True: 1071, False: 1219}
    sa = truefalse.load_selfaware()
    assert collections.Counter(it.gold for it in sa) == {True: 2337, False: 1032}
    answers = truefalse.load_selfaware(mode="answer")
    assert len(answers) == 2337 and all(isinstance(it.gold, list) and it.gold for it in answers)
    assert all(it.context_kind == "none" for it in tqa + sqa + sa)


def test_unknown_names_and_options():
    with pytest.raises(ValueError, match="unknown benchmark 'squad3'"):
        load_items("squad3")
    assert "audit" in BENCHMARKS
    with pytest.raises(ValueError, match="pairing"):
        truefalse.load_truthfulqa(pairing="random")


@needs_data
def test_audit_dispatches_lazily(monkeypatch):
    import sys
    import types

    fake = types.ModuleType("metacog.benchmarks.audit")
    calls = []
    fake.load_items = lambda n_items=None, seed=0: calls.append((n_items, seed)) or []
    monkeypatch.setitem(sys.modules, "metacog.benchmarks.audit", fake)
    assert load_items("audit", n_items=7, seed=3) == []
    assert calls == [(7, 3)]


# ---------------------------------------------------------------------------
# Malformed files: errors name the file and the line
# ---------------------------------------------------------------------------

def _clear_caches():
    for fn in (squad._load, mmlu_pro._load, mathsets._load_math, mathsets._load_math500,
               mathsets._load_omni, truefalse._load_truthfulqa, truefalse._load_strategyqa,
               truefalse._load_selfaware, legalbench._load_task, legalbench.task_info,
               _files.read_json, _files.read_jsonl, _files.read_table, _files.check_sizes,
               _files.dataset_dir):
        fn.cache_clear()


@pytest.fixture
def fake_mirror(tmp_path, monkeypatch):
    """Point every loader at tmp_path/<name> with the files given."""

    def use(name: str, files: dict[str, str]):
        folder = tmp_path / name
        for rel, text in files.items():
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text, encoding="utf-8")
        _clear_caches()
        monkeypatch.setattr(_files, "dataset_dir", lambda n: folder)
        monkeypatch.setattr(legalbench, "dataset_dir", lambda n: folder)
        return folder

    yield use
    monkeypatch.undo()  # restore the real dataset_dir before emptying the caches
    _clear_caches()


MMLU_ROW = {"question_id": 1, "question": "Q?", "options": ["x", "y", "z"], "answer": "B",
            "answer_index": 1, "category": "math", "src": "s"}


def test_malformed_jsonl_names_file_and_line(fake_mirror):
    good = json.dumps(MMLU_ROW)
    folder = fake_mirror("mmlu_pro", {"test.jsonl": good + "\n" + good.replace('"question_id": 1', '"question_id": 2')
                                      + "\n{\"question_id\": 3, \"question\": \n"})
    with pytest.raises(_files.DataFileError) as err:
        mmlu_pro.load_items()
    assert str(folder / "test.jsonl") in str(err.value) and "line 3" in str(err.value)
    assert isinstance(err.value, ValueError)


def test_missing_field_names_file_and_line(fake_mirror):
    row = dict(MMLU_ROW)
    del row["options"]
    fake_mirror("mmlu_pro", {"test.jsonl": json.dumps(MMLU_ROW) + "\n\n" + json.dumps(row) + "\n"})
    with pytest.raises(_files.DataFileError, match=r"test\.jsonl, line 3: missing field\(s\) \['options'\]"):
        mmlu_pro.load_items()


def test_bad_letter_names_line(fake_mirror):
    row = dict(MMLU_ROW, answer="F")
    fake_mirror("mmlu_pro", {"test.jsonl": json.dumps(row) + "\n"})
    with pytest.raises(_files.DataFileError, match=r"line 1: answer 'F' does not fit 3 options"):
        mmlu_pro.load_items()


def test_malformed_csv_names_line(fake_mirror):
    header = "Type,Category,Question,Best Answer,Correct Answers,Incorrect Answers,Source\n"
    row = "Adversarial,Misc,Q?,A,A; B,C; D,http://x\n"
    fake_mirror("truthfulqa", {"truthfulqa.csv": header + row + "Adversarial,Misc,cut off here\n"})
    with pytest.raises(_files.DataFileError, match=r"truthfulqa\.csv, line 3: 3 fields but the header has 7"):
        truefalse.load_truthfulqa()


def test_malformed_json_names_line(fake_mirror):
    fake_mirror("squad", {"dev-v2.0.json": '{"data": [\n  {"title": "x",\n  "paragraphs": [}\n'})
    with pytest.raises(_files.DataFileError, match=r"dev-v2\.0\.json, line 3: not valid JSON"):
        squad.load_items()


def test_legalbench_tsv_field_count(fake_mirror):
    folder = fake_mirror("legalbench", {
        "tasks/toy/README.md": "# toy\n\n### Say yes.\n\n**Task type**: Binary classification\n\n"
                               "## Task description\nA toy task.\n",
        "tasks/toy/base_prompt.txt": "Answer yes.\n\nQ: example\nA: Yes\n\nQ: {{text}}\nA:",
        "tasks/toy/test.tsv": "answer\tindex\ttext\nYes\t0\tfine\nNo\t1\n",
    })
    with pytest.raises(_files.DataFileError, match=r"test\.tsv, line 3: 2 fields but the header has 3"):
        legalbench.load_items(tasks=["toy"])
    (folder / "tasks/toy/test.tsv").write_text("answer\tindex\ttext\nYes\t0\tfine\nNo\t1\tnope\n")
    _files.read_table.cache_clear()
    items = legalbench.load_items(tasks=["toy"])
    assert [it.item_id for it in items] == ["toy/0", "toy/1"]
    # instruction + filled template, cue dropped, then the labels (few-shot examples are not shown)
    assert items[0].question.startswith("Answer yes.\n\nQ: fine\n\nAnswer with one of: ")
    assert items[0].context == "A toy task." and items[0].meta["labels"] == ["No", "Yes"]


def test_legalbench_states_the_labels_only_when_the_question_does_not():
    from metacog.benchmarks.legalbench import _label_hint

    assert _label_hint(["No", "Yes"], "Is there hearsay?") == "\n\nAnswer with one of: No, Yes."
    assert _label_hint(["No", "Yes"], "Answer Yes or No. Is there hearsay?") == ""
    assert _label_hint(["A", "B", "C"], "Covered? [A: Yes; B: No; C: It's ambiguous]") == ""
    assert _label_hint(["A", "B", "C"], "Covered?") == "\n\nAnswer with one of: A, B, C."
    assert _label_hint([], "Name the parties.") == ""  # not a classification task
