"""Hand-checked examples for every grader in metacog.benchmarks.grading.

Each parametrized table was written by hand (expected values worked out
without running the code); no grader needs the data mirror.
"""

from __future__ import annotations

import pytest

from metacog.benchmarks.grading import (
    answer_in_response,
    balanced_accuracy,
    citation_open_correct,
    extract_boxed,
    extract_final_answer,
    extract_letter,
    extract_yes_no,
    grade,
    legalbench_correct,
    legalbench_extract_label,
    legalbench_task_score,
    math_equivalent,
    mmlu_pro_correct,
    normalize_answer,
    option_text_match,
    sara_numeric_correct,
    squad_em,
    squad_f1,
    yes_no_correct,
)
from metacog.tidy.items import Item

# ---------------------------------------------------------------------------
# SQuAD
# ---------------------------------------------------------------------------

NORMALIZE = [
    ("The Denver Broncos", "denver broncos"),
    ("  an apple, a pear!  ", "apple pear"),
    ("Theory of the Universe", "theory of universe"),
    ("U.S.A.", "usa"),
    ("Thermal   \n energy", "thermal energy"),
    ("ANOTHER", "another"),  # 'an' inside a word is not an article
    ("$12", "12"),
]


@pytest.mark.parametrize("text,expected", NORMALIZE)
def test_normalize_answer(text, expected):
    assert normalize_answer(text) == expected


SQUAD_EM = [
    ("Denver Broncos", ["Denver Broncos"], True),
    ("the Denver Broncos", ["Denver Broncos"], True),
    ("Denver Broncos.", ["Denver Broncos"], True),
    ("denver broncos", ["Denver Broncos"], True),
    ("Broncos", ["Denver Broncos"], False),
    ("Broncos", ["Denver Broncos", "Broncos"], True),
    ("October 1973", ["October 1973", "October", "1973"], True),
    ("1973", ["October 1973", "October", "1973"], True),
    ("in 1973", ["October 1973", "1973"], False),
    ("nearly $12", ["nearly $12", "$12"], True),
    ("12", ["nearly $12", "$12"], True),
    ("", ["Paris"], False),
    ("", [], True),  # official rule: no gold answers and an empty prediction match
    ("Paris", "Paris", True),  # a single string works as the gold
    ("Santa Clara, California", ["Santa Clara, California"], True),
    ("Santa Clara California", ["Santa Clara, California"], True),
    ("Levi's Stadium", ["Levi's Stadium"], True),
    ("Levis Stadium", ["Levi's Stadium"], True),
    ("Levi Stadium", ["Levi's Stadium"], False),
    ("An apple", ["apple"], True),
]


@pytest.mark.parametrize("pred,gold,expected", SQUAD_EM)
def test_squad_em(pred, gold, expected):
    assert squad_em(pred, gold) is expected


SQUAD_F1 = [
    # pred tokens vs gold tokens after normalisation -> P, R, F1 by hand
    ("Denver Broncos", ["Denver Broncos"], 1.0),
    ("the Broncos", ["Denver Broncos"], 2 * (1 * 0.5) / 1.5),  # [broncos] vs [denver broncos]: P=1, R=1/2
    ("Denver", ["Denver Broncos"], 2 / 3),
    ("Carolina Panthers", ["Denver Broncos"], 0.0),
    ("", ["Denver Broncos"], 0.0),
    ("", [], 1.0),
    ("Broncos", ["Denver Broncos", "Broncos"], 1.0),  # max over the golds
    ("in October 1973", ["October 1973"], 0.8),  # P=2/3, R=1 -> 0.8
    ("1973 1973", ["1973"], 2 * 0.5 * 1 / 1.5),  # counts clip: common=1, P=1/2, R=1
    ("a b c d", ["c d e f g h"], 4 / 9),  # 'a' is an article: [b c d] vs 6 tokens, P=2/3, R=1/3
    ("the the the", ["the"], 1.0),  # both normalise to empty
    ("Paris France", "Paris", 2 / 3),
    ("Nikola Tesla", ["Tesla"], 2 / 3),
    ("New York City", ["New York"], 0.8),
    ("New York", ["New York City"], 0.8),
    ("York New", ["New York"], 1.0),  # bag of tokens, order ignored
    ("Sun", ["the sun", "a star"], 1.0),
    ("star sun", ["the sun", "a star"], 2 / 3),
    ("Warsaw, Poland", ["Warsaw"], 2 / 3),
    ("x", ["y"], 0.0),
]


@pytest.mark.parametrize("pred,gold,expected", SQUAD_F1)
def test_squad_f1(pred, gold, expected):
    assert squad_f1(pred, gold) == pytest.approx(expected)


def test_squad_f1_worked_example():
    # Worked by hand with the official definition:
    # prediction "The Denver Broncos won in 2016" -> normalised tokens
    #   [denver, broncos, won, in, 2016]           (5 tokens; 'the' dropped)
    # gold "Denver Broncos"            -> [denver, broncos]           common 2: P=2/5, R=2/2 -> F1=4/7
    # gold "Broncos won Super Bowl 50" -> [broncos, won, super, bowl, 50] common 2: P=2/5, R=2/5 -> F1=2/5
    # F1 is the maximum over gold answers: max(4/7, 2/5) = 4/7 = 0.5714...
    pred = "The Denver Broncos won in 2016"
    golds = ["Denver Broncos", "Broncos won Super Bowl 50"]
    assert squad_f1(pred, golds) == pytest.approx(4 / 7)
    assert squad_em(pred, golds) is False


def test_grade_squad_metrics_and_answer_marker():
    item = Item("q1", "squad", "Who won Super Bowl 50?", ["Denver Broncos"], "passage", "passage")
    assert grade("squad", "Reasoning...\nAnswer: Denver Broncos", item) == 1.0
    assert grade("squad", "The answer is the Broncos.", item) == pytest.approx(2 / 3)
    assert grade("squad", "The answer is the Broncos.", item, threshold=0.5) is True
    assert grade("squad", "The answer is the Broncos.", item, metric="em") is False
    with pytest.raises(ValueError, match="metric"):
        grade("squad", "x", item, metric="bleu")


FINAL = [
    ("Answer: Paris", "Paris"),
    ("I think...\nThe answer is **Paris**.", "Paris"),
    ("Final answer: 42", "42"),
    ("Paris", "Paris"),
    ("Label: Yes", "Yes"),
]


@pytest.mark.parametrize("text,expected", FINAL)
def test_extract_final_answer(text, expected):
    assert extract_final_answer(text) == expected


# ---------------------------------------------------------------------------
# MMLU-Pro
# ---------------------------------------------------------------------------

LETTER = [
    ("The answer is (C).", 10, "C"),
    ("the answer is C", 10, "C"),
    ("Answer: D", 10, "D"),
    ("**Answer: F**", 10, "F"),
    ("C", 10, "C"),
    ("(B)", 10, "B"),
    ("B.", 10, "B"),
    ("B. 42 kg", 10, "B"),
    ("E) because of friction", 10, "E"),
    ("\\boxed{E}", 10, "E"),
    ("Option G is right", 10, "G"),
    ("The correct choice is J", 10, "J"),
    ("answer is A, no wait, the answer is H", 10, "H"),  # the last marked answer wins
    ("The answer is (J)", 4, None),  # J is not among 4 options
    ("Answer: D", 4, "D"),
    ("The answer is a dog", 10, None),  # lowercase 'a' is an article, not a letter
    ("A cat sat on the mat", 10, None),
    ("I am not sure", 10, None),
    ("", 10, None),
    ("Let me think. Step 1 ... The answer is (I).", 10, "I"),
    ("answer: K", 10, None),
]


@pytest.mark.parametrize("text,n,expected", LETTER)
def test_extract_letter(text, n, expected):
    assert extract_letter(text, n_options=n) == expected


OPTIONS = ["Paris", "Lyon", "New Paris", "12.5", "none of the above"]
TEXT_MATCH = [
    ("Paris", 0, True),
    ("paris.", 0, True),
    ("The answer is Paris.", 0, True),
    ("Answer: The city of Paris", 0, True),
    ("Lyon", 0, False),
    ("Paris or Lyon", 0, False),  # names a rival option too
    ("New Paris", 2, True),
    ("New Paris", 0, False),  # the reply names the rival option 'New Paris', not 'Paris'

    ("12.5", 3, True),
    ("12.50", 3, True),  # same number
    ("Answer: 12.500", 3, True),
    ("125", 3, False),
    ("None of the above", 4, True),
    ("Parisian", 0, False),  # whole words only
    ("", 0, False),
    ("I don't know", 1, False),
    ("Lyon, France", 1, True),
    ("Answer: Lyon", 0, False),
    ("It must be Lyon", 1, True),
    ("Marseille", 1, False),
]


@pytest.mark.parametrize("text,idx,expected", TEXT_MATCH)
def test_option_text_match(text, idx, expected):
    assert option_text_match(text, OPTIONS, idx) is expected


def test_mmlu_pro_correct_both_modes():
    item = Item("1", "mmlu_pro", "Capital of France?", "A", "A. Paris\nB. Lyon", "options",
                meta={"options": ["Paris", "Lyon"], "answer_index": 0, "answer_text": "Paris"})
    assert mmlu_pro_correct("The answer is (A)", item) is True
    assert mmlu_pro_correct("The answer is (B)", item) is False
    assert mmlu_pro_correct("Paris", item, options_shown=False) is True
    # no letter given: the copied option text is graded instead
    assert mmlu_pro_correct("Final answer: Paris", item, options_shown=True) is True
    assert mmlu_pro_correct("Final answer: Lyon", item, options_shown=True) is False
    assert mmlu_pro_correct("Paris or Lyon", item, options_shown=True) is False
    assert mmlu_pro_correct("Paris. The answer is (B)", item, options_shown=True) is False  # the letter wins
    assert grade("mmlu_pro", "Lyon", item, options_shown=False) is False


# ---------------------------------------------------------------------------
# Yes / no
# ---------------------------------------------------------------------------

YES_NO = [
    ("Yes", True),
    ("No.", False),
    ("yes, because the passage says so", True),
    ("**No**", False),
    ("I think the answer is yes.", True),
    ("True", True),
    ("false", False),
    ("Maybe", None),
    ("The answer: No", False),
    ("I have no idea", None),
    ("Answer: YES", True),
    ("After thinking it through, no.", False),
    ("So yes", True),
    ("", None),
    ("Decision: no", False),
    ("It depends on the context.", None),
    ("NO - the statute does not apply", False),
    ("'Yes'", True),
    ("Yes.\nNo wait.", True),  # the opening word wins
    ("Judgment: yes", True),
    ("I cannot say yes or no.", None),
]


@pytest.mark.parametrize("text,expected", YES_NO)
def test_extract_yes_no(text, expected):
    assert extract_yes_no(text) is expected


def test_yes_no_correct_and_grade():
    assert yes_no_correct("Yes", True) and not yes_no_correct("Yes", False)
    assert not yes_no_correct("unsure", True) and not yes_no_correct("unsure", False)
    item = Item("s1", "strategyqa", "Would a pear sink in water?", False)
    assert grade("strategyqa", "No.", item) is True
    assert grade("strategyqa", "Yes.", item) is False
    short = Item("sa1", "selfaware", "What form is 'Slow Poke'?", ["song"])
    assert grade("selfaware", "It is a song.", short) is True
    assert answer_in_response("songs", ["song"]) is False
    audit = Item("a1", "audit", "Is Canberra the capital of Australia?", "yes")
    assert grade("audit", "Yes.", audit) is True and grade("audit", "No.", audit) is False


# ---------------------------------------------------------------------------
# MATH family (math-verify)
# ---------------------------------------------------------------------------

MATH = [
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}", True),
    ("The answer is $\\boxed{0.5}$.", "\\frac{1}{2}", True),
    ("So the answer is 1/2.", "\\frac{1}{2}", True),
    ("$\\boxed{\\dfrac12}$", "0.5", True),
    ("$\\boxed{\\frac{9}{7}}$", "\\dfrac{9}{7}", True),
    ("$\\boxed{2}$", "3", False),
    ("$\\boxed{\\{2,1\\}}$", "\\{1,2\\}", True),  # sets ignore order
    ("$\\boxed{(0,1]}$", "(0,1]", True),
    ("$\\boxed{[0,1]}$", "(0,1]", False),  # intervals check their ends
    ("$\\boxed{(3,\\pi/2)}$", "\\left( 3, \\frac{\\pi}{2} \\right)", True),
    ("$\\boxed{(x+1)^2}$", "x^2+2x+1", True),
    ("$\\boxed{2^{1/2}}$", "\\sqrt{2}", True),
    ("$\\boxed{\\sqrt{8}}$", "2\\sqrt{2}", True),
    ("The final answer is 115440.", "115440", True),
    ("$\\boxed{115441}$", "115440", False),
    ("$\\boxed{-3}$", "3", False),
    ("The total is $32,348.", "\\$32,\\!348", True),
    ("$\\boxed{18.90}$", "\\$18.90", True),
    ("$\\boxed{\\pi}$", "3.14", False),
    ("no answer here", "5", False),
    ("$\\boxed{}$", "5", False),
    ("$\\boxed{x=5}$", "5", True),
]


@pytest.mark.parametrize("response,gold,expected", MATH)
def test_math_equivalent(response, gold, expected):
    assert math_equivalent(response, gold) is expected


BOXED = [
    ("so $\\boxed{2}$", "2"),
    ("$\\boxed{\\frac{1}{2}}$", "\\frac{1}{2}"),
    ("first \\boxed{1} then \\boxed{2}", "2"),
    ("\\fbox{7}", "7"),
    ("\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}", "\\left( 3, \\frac{\\pi}{2} \\right)"),
    ("no box", None),
    ("\\boxed{unclosed", None),
]


@pytest.mark.parametrize("text,expected", BOXED)
def test_extract_boxed(text, expected):
    assert extract_boxed(text) == expected


def test_grade_dispatches_math_family():
    for bench in ("math", "math500", "omni_math"):
        item = Item("m", bench, "What is 1/2 as a decimal?", "\\frac{1}{2}")
        assert grade(bench, "$\\boxed{0.5}$", item) is True
        assert grade(bench, "$\\boxed{0.25}$", item) is False


# ---------------------------------------------------------------------------
# LegalBench
# ---------------------------------------------------------------------------

LABELS = [
    ("Yes", ["No", "Yes"], "Yes"),
    ("No, this is not hearsay.", ["No", "Yes"], "No"),
    ("The statement is hearsay: yes", ["No", "Yes"], "Yes"),
    ("C", ["A", "B", "C"], "C"),
    ("Answer: B", ["A", "B", "C", "D"], "B"),
    ("The answer is (E)", ["A", "B", "C", "D"], None),  # E is not a label
    ("Option A: 12 months or longer", ["A", "B", "C", "D", "E"], "A"),
    ("2", ["0", "1", "2", "3", "4"], "2"),
    ("Answer: 3", ["0", "1", "2", "3", "4"], "3"),
    ("Holding 4 is the most relevant", ["0", "1", "2", "3", "4"], "4"),
    ("suggestive", ["arbitrary", "descriptive", "fanciful", "generic", "suggestive"], "suggestive"),
    ("The mark is Generic.", ["arbitrary", "descriptive", "fanciful", "generic", "suggestive"], "generic"),
    ("Label: Arbitration", ["Arbitration", "Other", "Choice of law"], "Arbitration"),
    ("This is a choice of law clause", ["Arbitration", "Other", "Choice of law"], "Choice of law"),
    ("Entailment", ["Contradiction", "Entailment"], "Entailment"),
    ("contradiction.", ["Contradiction", "Entailment"], "Contradiction"),
    ("Facts", ["Analysis", "Facts", "Procedural History", "Rule"], "Facts"),
    ("It describes the procedural history", ["Analysis", "Facts", "Procedural History", "Rule"],
     "Procedural History"),
    ("I cannot tell", ["Analysis", "Facts", "Rule"], None),
    ("", ["No", "Yes"], None),
    ("Clarification", ["Background", "Clarification", "Implications"], "Clarification"),
]


@pytest.mark.parametrize("text,labels,expected", LABELS)
def test_legalbench_extract_label(text, labels, expected):
    assert legalbench_extract_label(text, labels) == expected


BALANCED = [
    # golds, preds, expected (by hand: mean of per-class recall)
    (["Yes", "Yes", "No", "No"], ["Yes", "Yes", "No", "No"], 1.0),
    (["Yes", "Yes", "No", "No"], ["Yes", "Yes", "Yes", "Yes"], 0.5),
    (["Yes", "Yes", "Yes", "No"], ["Yes", "Yes", "Yes", "Yes"], 0.5),  # plain accuracy would be 0.75
    (["Yes", "Yes", "Yes", "No"], ["Yes", "No", "Yes", "No"], (2 / 3 + 1) / 2),
    (["A", "B", "C"], ["A", "B", "B"], (1 + 1 + 0) / 3),
    (["A", "A", "B"], [None, "A", "B"], (0.5 + 1) / 2),  # unparseable counts wrong
    (["No"] * 9 + ["Yes"], ["No"] * 10, 0.5),
]


@pytest.mark.parametrize("golds,preds,expected", BALANCED)
def test_balanced_accuracy(golds, preds, expected):
    assert balanced_accuracy(golds, preds) == pytest.approx(expected)


def test_balanced_accuracy_matches_sklearn():
    from sklearn.metrics import balanced_accuracy_score

    golds = ["a", "b", "c", "a", "a", "b", "c", "c", "c"]
    preds = ["a", "b", "b", "a", "c", "b", "c", "a", "c"]
    assert balanced_accuracy(golds, preds) == pytest.approx(balanced_accuracy_score(golds, preds))
    with pytest.raises(ValueError, match="2 golds but 1"):
        balanced_accuracy(["a", "b"], ["a"])


def _lb(task, kind, gold, labels=()):
    return Item(f"{task}/1", "legalbench", "input", gold, "definition", "definition",
                meta={"task": task, "task_kind": kind, "labels": list(labels)})


def test_legalbench_special_task_graders():
    # SARA numeric: within 10% of the gold amount (first number of the reply)
    assert sara_numeric_correct("$178,000 in tax", "$178147") is True
    assert sara_numeric_correct("The tax is $150,000", "$178147") is False
    assert sara_numeric_correct("no idea", "$178147") is False
    assert legalbench_correct("Answer: 26549", _lb("sara_numeric", "numeric", "$26549")) is True
    # successor liability: F1 over the named exceptions
    item = _lb("successor_liability", "multilabel", ["fraudulent conveyance", "mere continuation"])
    assert legalbench_correct("fraudulent conveyance, mere continuation", item) == 1.0
    assert legalbench_correct("mere continuation", item) == pytest.approx(2 / 3)  # P=1, R=1/2
    assert legalbench_correct("de facto merger", item) == 0.0
    # SSLA extraction: fuzzy name F1
    ssla = _lb("ssla_individual_defendants", "extraction", ["Yanlai Shi", "Wei Ping"])
    assert legalbench_correct("Yanlai Shi, Wei Ping", ssla) == 1.0
    assert legalbench_correct("Yanlai Shi", ssla) == pytest.approx(2 / 3)
    assert legalbench_correct("John Smith", ssla) == 0.0
    nobody = _lb("ssla_plaintiff", "extraction", ["Not named"])
    assert legalbench_correct("Not named", nobody) == 1.0
    assert legalbench_correct("Ruth May", nobody) == 0.0
    # open citation
    assert citation_open_correct("See Phillips v. AWH Corp., 415 F.3d 1303", "Phillips v. AWH Corp.")
    assert not citation_open_correct("See Markman v. Westview", "Phillips v. AWH Corp.")
    # classification
    cls = _lb("hearsay", "classification", "Yes", ["No", "Yes"])
    assert legalbench_correct("Yes, it is hearsay", cls) is True
    assert legalbench_correct("No", cls) is False


def test_legalbench_task_score_is_balanced_accuracy():
    items = [Item(f"hearsay/{i}", "legalbench", "q", g, "d", "definition",
                  meta={"task": "hearsay", "task_kind": "classification", "labels": ["No", "Yes"]})
             for i, g in enumerate(["Yes", "Yes", "Yes", "No"])]
    # all answered Yes: recall(Yes)=1, recall(No)=0 -> 0.5 (accuracy would be 0.75)
    assert legalbench_task_score(items, ["Yes"] * 4) == pytest.approx(0.5)
    assert legalbench_task_score(items, ["Yes", "Yes", "Yes", "No"]) == pytest.approx(1.0)
    other = Item("abercrombie/1", "legalbench", "q", "generic", "d", "definition",
                 meta={"task": "abercrombie", "task_kind": "classification", "labels": ["generic"]})
    with pytest.raises(ValueError, match="one task"):
        legalbench_task_score(items[:1] + [other], ["Yes", "generic"])


def test_grade_unknown_benchmark():
    with pytest.raises(ValueError, match="unknown benchmark 'nope'"):
        grade("nope", "x", Item("1", "nope", "q", "a"))
