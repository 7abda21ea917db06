"""The claims of both papers as the findings page lists them, typed from the papers (never
computed), with where each comes from."""

from __future__ import annotations

from metacog.hypotheses.miscalibration.hidden import PAPER_PROBE_SIZES
from metacog.hypotheses.pairwise import PAPER1
from metacog.hypotheses.pairwise.population import PAPER1_AUROC

#: The models paper 2 decides each of its claims on, for the size caveat of a row decided on
#: another model (typed from paper 2: its policy logs are gpt-4.1-mini's, its probe runs on
#: three 7–8B open models).
PAPER2_MODELS = {"p2-gain": "used gpt-4.1-mini", "p2-h-proxy": "used gpt-4.1-mini",
                 "p2-damping": f"probed {PAPER_PROBE_SIZES} models",
                 "p2-stable": f"probed {PAPER_PROBE_SIZES} models"}


def _paper1(index: int, fmt: str) -> str:
    """Paper 1's figure ``index`` of :data:`metacog.hypotheses.pairwise.PAPER1` per benchmark."""
    return ", ".join(f"{fmt.format(v[index])} ({b})" for b, v in PAPER1.items() if v[index] is not None)


#: The claims of both papers, typed from the papers (never computed). ``match``: the words of
#: a chapter's verdict claim that mark it as this claim (the longest match wins);
#: ``paper_says``: whether the paper asserts the verdict's claim ("holds") or denies it ("does
#: not hold"); ``contrast`` (optional): why the chapter's statistic is not the paper's, so that
#: no row of the claim is compared with the paper.
PAPER_CLAIMS = [
    dict(id="p1-rank-one", paper="paper 1", chapter="rank_one", match="dominated by one factor",
         paper_says="holds",
         claim="Binary confidence across models is close to rank one on knowledge tasks",
         value="one dominant factor captures most of the latent variance on fact recall and retrieval; "
               "first-factor share " + _paper1(3, "{:g}%"),
         where="abstract and §1 (first finding); the shares from its results table as typed in "
               "metacog.hypotheses.pairwise.PAPER1",
         paper_design="prospective and counterfactual yes/no, 20 frontier models, six benchmarks"),
    dict(id="p1-link", paper="paper 1", chapter="rank_one", match="no longer follows the performance axis",
         paper_says="holds",
         claim="Without unanimous items the confidence axis no longer follows the performance axis",
         value="on every benchmark the confidence-performance link vanishes once items all models agree "
               "on are removed (stated in words, without a figure, in the abstract and §1)",
         where="abstract; §1 (second finding, §3.3)",
         paper_design="prospective and counterfactual yes/no, 20 frontier models, six benchmarks"),
    dict(id="p1-pairwise", paper="paper 1", chapter="pairwise",
         match="lies above the base-rate-matched null's mean", paper_says="holds",
         claim="Pairwise calibration between different models lies above a base-rate-matched null, "
               "barely",
         value="mean pairwise τ-b minus the base-rate-matched null's mean " + ", ".join(
             f"{t - nm:.3f} ({b})" for b, (t, nm, _, _) in PAPER1.items())
               + " (its mean τ-b less its null's mean)",
         where="abstract; §1 (fourth finding, §3.3); the τ-b values and null means from its results "
               "table as typed in metacog.hypotheses.pairwise.PAPER1",
         paper_design="prospective yes/no, 20 frontier models"),
    dict(id="p1-individual", paper="paper 1", chapter="pairwise", match="",
         paper_says="does not hold",
         claim="A model's confidence tracks its own correctness better than other models'",
         value="no number for the self-minus-other τ-b: paper 1 reports a different statistic, the mean "
               "pairwise τ-b over pairs of different models (" + _paper1(0, "{:.3f}")
               + "), and says the signal is gone once base rates are controlled",
         where="abstract; §1 (fourth finding, §3.3); the τ-b values from its results table as typed "
               "in metacog.hypotheses.pairwise.PAPER1",
         paper_design="prospective yes/no, 20 frontier models"),
    dict(id="p1-individual-beyond", paper="paper 1", chapter="power", match="beyond base rates",
         paper_says="does not hold",
         claim="A model's confidence tracks its own correctness better than other models', beyond "
               "base rates",
         value="no number for the excess of self-minus-other τ-b over a null: paper 1 reports the mean "
               "pairwise τ-b over pairs of different models (" + _paper1(0, "{:.3f}")
               + ") and says the signal is gone once base rates are controlled",
         where="abstract; §1 (fourth finding, §3.3); the τ-b values from its results table as typed "
               "in metacog.hypotheses.pairwise.PAPER1",
         paper_design="prospective yes/no, 20 frontier models"),
    dict(id="p1-internal", paper="paper 1", chapter="pairwise",
         match="better than the other models' mean confidence", paper_says="does not hold",
         claim="A model's own confidence predicts its correctness better than the other models' mean "
               "confidence (internal against population AUROC)",
         value="no panel mean of internal − population AUROC: paper 1 gives per-model AUROCs, e.g. "
               "GPT-4o internal against population " + ", ".join(
             f"{v[0]:.3f} against {v[1]:.3f} ({b})" for b, by in PAPER1_AUROC.items() for m, v in by.items()
             if m == "gpt-4o"),
         where="§3.3 (per-model test); the AUROCs as typed in "
               "metacog.hypotheses.pairwise.population.PAPER1_AUROC",
         paper_design="prospective yes/no, 20 frontier models"),
    dict(id="p1-shortcut", paper="paper 1", chapter="shortcut", match="symbolic-shortcut account",
         paper_says="holds",
         claim="MathBench's apparent calibration is reasoning models solving the problem inline",
         value="the signal sits entirely in reasoning against non-reasoning pairs (no figure in the "
               "abstract)",
         where="abstract; §1 (fifth finding, §3)", paper_design="prospective yes/no on MathBench"),
    dict(id="p1-reasoning-text", paper="paper 1", chapter="reasoning_text", match="text probe beats",
         paper_says="holds",
         claim="A classifier of the confidence reasoning text beats the model's own yes/no",
         value="matches or beats the model's own binary self-assessment on 3 of 6 benchmarks; the "
               "abstract adds that on half the benchmarks it beats repeated sampled judgments",
         where="abstract; §1 (third finding, §3.4 and §A.1)",
         paper_design="prospective yes/no with its reasoning text"),
    dict(id="p2-gain", paper="paper 2", chapter="miscalibration", match="lowers the policy-aware loss",
         paper_says="holds",
         claim="Self-critique with abstention (C2) lowers the policy-aware loss against C0",
         value="domain gains of C2 over C0 on 532 binary audit items in 11 domains (gpt-4.1-mini)",
         where="abstract; §1 (claim 2) and §4", paper_design="verbal P(correct) after a yes/no answer, "
                                                            "gpt-4.1-mini, policies C0/C1/C2"),
    dict(id="p2-h-proxy", paper="paper 2", chapter="miscalibration", match="H_proxy ranks",
         paper_says="holds",
         claim="H_proxy ranks the domains where self-critique helps",
         value="the audit score tracks the domains where C2 reduces the loss, though direct label "
               "baselines rank the gains more strongly",
         where="abstract; §1 (claim 2)", paper_design="verbal P(correct) after a yes/no answer, "
                                                      "gpt-4.1-mini, λ = 1, threshold 0.8"),
    dict(id="p2-damping", paper="paper 2", chapter="miscalibration", match="self-critique damps",
         paper_says="holds",
         claim="Self-critique prompts lower hidden-state sensitivity",
         contrast="the chapter compares self-critique with a length-matched plain prompt, paper 2 with "
                  "the plain prompt",
         value="lower layer-wise sensitivity under self-critique in three open models (σ = 0.01, "
               "40 trials per item)",
         where="abstract; §1 (claim 3) and §4 (internal probe)",
         paper_design="Gaussian embedding noise; Llama-3.1-8B, DeepSeek-R1-Distill-Llama-8B, Qwen2.5-7B"),
    dict(id="p2-stable", paper="paper 2", chapter="miscalibration", match="as stable as confident hits",
         paper_says="holds",
         claim="Confident errors are as stable as confident hits",
         value="overconfident-wrong items show no clear sensitivity difference from confident-correct "
               "ones",
         where="abstract; §1 (claim 3)",
         paper_design="CC/OCW groups from gpt-4.1-mini's C0 log at confidence 0.8, probed on three open "
                      "models"),
]
