"""How each source's confidence was elicited: its *design*, as data.

A confidence judgment is only comparable with another made the same way. Paper 1's claims are
about *prospective* judgments (made before the model answers) and *counterfactual* ones (made
after a correct answer given with the context: could it have answered without?); most public
panels ask *after answering*. Every panel carries its :class:`Design`, looked up here:

- ``timing``: one of :data:`TIMINGS` — "prospective", "counterfactual", "after answering",
  "prospective, about other people" (a judgment of others' success, not one's own),
  "at answering" (the answer's own token probability) or "unknown";
- ``elicitation``: how the judgment was asked and read (verbal number, KEEP/WITHDRAW,
  BET/NO-BET, answer-or-pass, token probability, yes/no ...);
- ``temperature`` and ``prompt``: as far as the source records them;
- ``basis``: where these facts come from (the loader, the panel's own code in the mirror).

:data:`DESIGNS` holds the facts per (source, probe) for the public logs; recorded runs of the
local panel share :data:`RUN_DESIGNS` per probe (temperature from ``runs.yml``); a recorded run
that asks a public panel's protocol (``options.protocol``) takes that panel's design, with the
temperature and reply cap it was asked with. A user's own
file has an unknown design unless it carries a ``design`` column (one of :data:`TIMINGS`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

__all__ = ["Design", "DESIGNS", "RUN_DESIGNS", "TIMINGS", "TIMING_ORDER", "UNKNOWN_DESIGN", "design", "designs_table",
           "timing_rank"]

PROSPECTIVE, COUNTERFACTUAL, AFTER = "prospective", "counterfactual", "after answering"
ABOUT_OTHERS, AT_ANSWER, UNKNOWN = "prospective, about other people", "at answering", "unknown"

#: Every timing, in the order pages list them: the designs of paper 1's claims first.
TIMINGS = (PROSPECTIVE, COUNTERFACTUAL, AFTER, ABOUT_OTHERS, AT_ANSWER, UNKNOWN)
TIMING_ORDER = {t: i for i, t in enumerate(TIMINGS)}

#: What each timing means, for a page.
TIMING_WORDS = {
    PROSPECTIVE: "judged before answering",
    COUNTERFACTUAL: "judged after a correct answer made with the context",
    AFTER: "judged after answering",
    ABOUT_OTHERS: "judged before answering, about other people's success",
    AT_ANSWER: "the answer's own token probability",
    UNKNOWN: "not recorded with the data",
}


@dataclass(frozen=True)
class Design:
    """How one panel's judgments were elicited (see the module docstring)."""

    timing: str
    elicitation: str
    temperature: str = "not recorded"
    prompt: str = "not recorded"
    basis: str = ""

    def row(self) -> dict:
        return asdict(self)


_SPAR = "spar/code (cma1114/spar_self_awareness @ f770ffb), metacog.data.spar"
_CS = ("calibration_study/protocol (Linwei94/LLM-Calibration-Study @ ddc349e): mmlu_pro_eval.py, "
       "utils/pre_processing.py, sampler/chat_completion_sampler.py")
_CS_TEMP = ("0 for API models (the sampler's default), 1 in the vLLM path for open-weight models; "
            "the result files do not say which")
_CS_PROMPT = "MULTI_CHOICE_NO_OPTIONS_SHARED_SAMPLING_TEMPLATE (conf_mode 'sampling', read by 'eval_all')"
_BATTERY = "Battery README (data format) and metacog.data.battery"
_BATTERY_TRACKS = ("Battery tracks T1-T6; in T6 only the items the model chose to answer (a KEEP or BET "
                   "recorded after a decline has no confidence)")

#: The public logs: (source, probe) -> Design.
DESIGNS: dict[tuple[str, str], Design] = {
    ("atlas", "verbal_confidence"): Design(
        AFTER, "verbal number 0-100 stated after the model's answer", basis=(
            "SOURCES.md (confidence verbalized 0-100) and metacog.data.atlas; the mirror holds no "
            "prompt code")),
    ("battery", "keep_withdraw"): Design(
        AFTER, "KEEP / WITHDRAW of its own answer (binary)", prompt=_BATTERY_TRACKS,
        basis=_BATTERY),
    ("battery", "bet_nobet"): Design(
        AFTER, "BET / NO-BET on its own answer (binary)", prompt=_BATTERY_TRACKS, basis=_BATTERY),
    ("battery", "path_choice"): Design(
        PROSPECTIVE, "ANSWER_DIRECTLY against REQUEST_HINT / DECLINE, chosen before answering",
        prompt="Battery track T6 (72 items)", basis=_BATTERY),
    ("spar", "prospective"): Design(
        PROSPECTIVE, "answer-or-pass (digit 1 or 2) in its own call before answering; +1 right, "
                     "-1 wrong, 0 pass", temperature="each run's run_parameters",
        prompt="pass game, decisionOnly; the 'consider' variant left out", basis=_SPAR),
    ("spar", "verbal_confidence"): Design(
        PROSPECTIVE, "verbal: one of eight percentage bins, 'your confidence that you would get "
                     "the question right', asked without answering", temperature="each run's run_parameters",
        prompt="capabilities_test, nested self question", basis=_SPAR),
    ("spar", "other_confidence"): Design(
        ABOUT_OTHERS, "verbal: one of eight bins, the share of college-educated people who would "
                      "get it right", temperature="each run's run_parameters",
        prompt="capabilities_test, nested other question", basis=_SPAR),
    ("spar", "answer"): Design(
        AT_ANSWER, "token probability of the chosen answer letter", temperature="each run's run_parameters",
        prompt="phase 1 (answer with a letter)", basis=_SPAR),
    ("calibration_study", "verbal_confidence"): Design(
        AFTER, "verbal number 0-100 in the same reply, after a step-by-step explanation and the "
               "answer letter", temperature=_CS_TEMP, prompt=_CS_PROMPT, basis=_CS),
    ("calibration_study", "logit_confidence"): Design(
        AFTER, "token logit: mean token probability over the whole reply (calculate_logit_perplexity)",
        temperature=_CS_TEMP, prompt=_CS_PROMPT, basis=_CS),
    ("calibration_study", "linguistic_confidence"): Design(
        AFTER, "hedging in the reply, mapped to a number by a judge model (decisiveness grading)",
        temperature=_CS_TEMP, prompt=_CS_PROMPT, basis=_CS),
}

_RUN = "metacog/elicit/templates/<probe>.v1.yaml and metacog.elicit.local (greedy unless runs.yml says)"

#: Recorded runs of the local panel, per probe (every run uses the same templates).
RUN_DESIGNS: dict[str, Design] = {
    "prospective": Design(
        PROSPECTIVE, "yes/no after a short reasoning, told a context exists but not shown it: "
                     "'could you answer without it?'", basis=_RUN),
    "counterfactual": Design(
        COUNTERFACTUAL, "yes/no after a correct answer made with the context: 'would you still have "
                        "answered correctly without it?'", basis=_RUN),
    "c0": Design(AFTER, "verbal P(correct) 0-1 on the line after a forced Yes/No answer (policy C0)", basis=_RUN),
    "c1": Design(AFTER, "verbal P(correct) 0-1 after a Yes/No answer; may abstain (policy C1)", basis=_RUN),
    "c2": Design(AFTER, "verbal P(correct) 0-1 after a self-critique and a Yes/No answer; may abstain "
                        "(policy C2)", basis=_RUN),
    "answer": Design(AT_ANSWER, "the answer itself (no judgment)", basis=_RUN),
    "answer_no_context": Design(AT_ANSWER, "the answer without the context (no judgment)", basis=_RUN),
}

UNKNOWN_DESIGN = Design(UNKNOWN, "unknown: a user's file without a 'design' column",
                        basis="the file itself")


def timing_rank(timing: str) -> int:
    """Position of a timing in :data:`TIMINGS` (unlisted timings last)."""
    return TIMING_ORDER.get(timing, len(TIMINGS))


def _temperatures(rows: pd.DataFrame | None) -> str | None:
    if rows is None or "temperature" not in rows:
        return None
    t = pd.to_numeric(rows["temperature"], errors="coerce").dropna().unique()
    if not len(t):
        return None
    per_model = rows.dropna(subset=["temperature"]).groupby("model", observed=True)["temperature"].first()
    counts = per_model.astype(float).value_counts().sort_index()
    return ", ".join(f"{v:g} ({int(n)} model{'s' if n != 1 else ''})" for v, n in counts.items())


def _run_temperature(name: str) -> str | None:
    from metacog.data import recorded

    try:
        runs = recorded.runs()
    except (OSError, ValueError):
        return None
    run = runs.get(name)
    return None if run is None else f"{run.temperature:g}"


def _prompts(rows: pd.DataFrame | None) -> str | None:
    if rows is None or "template_version" not in rows:
        return None
    v = sorted({str(x) for x in rows["template_version"].dropna().unique() if str(x)})
    return ", ".join(v) if v else None


def _protocol_design(run, probe: str) -> Design | None:
    """A recorded run that asks a public panel's protocol (``options: {protocol: ...}`` in
    ``runs.yml``, recorded by :mod:`metacog.elicit.protocols.record`): the panel's own design for
    ``probe`` (:data:`DESIGNS`), with the temperature and reply cap the run was asked with (the
    protocol's, the cap from ``runs.yml`` when it sets one). None for any other run."""
    import importlib

    name = (run.options or {}).get("protocol")
    d = DESIGNS.get((name, probe)) if name else None
    if d is None:
        return None
    proto = importlib.import_module(f"metacog.elicit.protocols.{name}").protocol()
    cap = int(run.max_tokens or proto.max_tokens)
    capped = (f"max_tokens {cap}" if cap == proto.max_tokens
              else f"max_tokens {cap} (the panel: {proto.max_tokens})")
    prompt = f"{d.prompt.split(' (', 1)[0]}, the panel's prompt verbatim; {capped}"
    return Design(d.timing, d.elicitation, f"{proto.temperature:g}", prompt,
                  basis=f"data/responses/runs.yml (run {run.name!r}, options.protocol) and "
                        f"metacog.elicit.protocols.{name}")


def _from_column(rows: pd.DataFrame | None) -> Design:
    """A user's file: its ``design`` column when it holds one known timing, else unknown."""
    if rows is None or "design" not in rows:
        return UNKNOWN_DESIGN
    given = {str(x).strip().lower() for x in rows["design"].dropna().unique() if str(x).strip()}
    if len(given) == 1 and next(iter(given)) in TIMINGS:
        t = next(iter(given))
        return Design(t, "as the file's 'design' column says", basis="the file's 'design' column")
    why = (f"the file's 'design' column mixes {sorted(given)}" if len(given) > 1 else
           f"the file's 'design' column says {sorted(given)}, not one of {list(TIMINGS)}" if given
           else "the file's 'design' column is empty")
    return Design(UNKNOWN, f"unknown: {why}", basis="the file itself")


def design(source: str, probe: str, rows: pd.DataFrame | None = None) -> Design:
    """The :class:`Design` of ``probe`` in ``source`` (a registered log, a recorded run, or a file).

    ``rows`` (the panel's tidy rows) fill in what the data record: the temperatures of spar's
    runs, a recorded run's template versions, a user file's ``design`` column.
    """
    import os

    from metacog.data import logs, recorded

    if isinstance(source, os.PathLike) or os.path.isfile(str(source)):
        return _from_column(rows)
    name = str(source).split(":", 1)[0]
    if name in logs.LOADERS:
        d = DESIGNS.get((name, probe))
        if d is None:
            return Design(UNKNOWN, f"probe {probe!r} of {name} has no documented design",
                          basis="metacog.data.designs")
        temps = _temperatures(rows)
        return Design(d.timing, d.elicitation, temps or d.temperature, d.prompt, d.basis)
    runs_file = recorded.RESPONSES / "runs.yml"
    try:
        is_run = runs_file.exists() and name in recorded.runs(runs_file)
    except (OSError, ValueError):
        is_run = False
    if is_run:
        asked = _protocol_design(recorded.runs(runs_file)[name], probe)
        if asked is not None:
            return asked
    if is_run and probe in RUN_DESIGNS:
        d = RUN_DESIGNS[probe]
        return Design(d.timing, d.elicitation, _run_temperature(name) or "0",
                      _prompts(rows) or f"{probe}@1", d.basis)
    return _from_column(rows)


def designs_table(sources: list[str] | None = None) -> pd.DataFrame:
    """One row per documented (source, probe): timing, elicitation, temperature, prompt, basis.

    ``sources`` (names such as "atlas" or "squad") limit the rows; recorded runs get the
    per-probe designs of :data:`RUN_DESIGNS` for the probes they declare.
    """
    from metacog.data import recorded

    rows = [{"source": s, "probe": p, **d.row()} for (s, p), d in DESIGNS.items()]
    try:
        runs = recorded.runs()
    except (OSError, ValueError):
        runs = {}
    for name, run in runs.items():
        for p in run.probes:
            d = design(name, p)
            rows.append({"source": name, "probe": p, **d.row()})
    out = pd.DataFrame(rows, columns=["source", "probe", "timing", "elicitation", "temperature",
                                      "prompt", "basis"])
    if sources is not None:
        out = out[out["source"].isin([str(s).split(":", 1)[0] for s in sources])]
    order = np.array([timing_rank(t) for t in out["timing"]])
    return out.iloc[np.argsort(order, kind="stable")].reset_index(drop=True)
