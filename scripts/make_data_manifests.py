"""Write metacog/data/manifests/<name>.json from a verified mirror folder.

Usage: python scripts/make_data_manifests.py ../shared/data [dataset ...]

With dataset names, only those manifests are rewritten.

Each manifest maps a file's path inside the dataset's mirror folder to its
sha256, its size and its path in the upstream repository at the pinned commit
(null for files that were rebuilt and so cannot be downloaded byte for byte).
Run it once when a dataset is added or re-pinned, and commit the result.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from metacog.data.fetch import sha256_file  # noqa: E402
from metacog.data.registry import DATASETS  # noqa: E402


def _atlas(rel: str) -> str | None:
    if rel.startswith("raw/") or rel.startswith("atlas_"):
        return f"data/{rel}"
    return {"README.upstream.md": "README.md"}.get(rel, rel)


def _battery(rel: str) -> str | None:
    return {"README.upstream.md": "README.md"}.get(rel, rel)


def _legalbench(rel: str) -> str | None:
    rel = {"README.upstream.md": "README.md"}.get(rel, rel)
    return f"legal/legalbench/{rel}"


def _spar(rel: str) -> str | None:
    return {"README.upstream.md": "readme.md"}.get(rel, rel)


def _spar_files(base: Path) -> list[Path]:
    """SimpleMC, the upstream readme and the four log families the loader reads (no ft:* files)."""
    keep = ["SimpleMC.jsonl", "README.upstream.md", "compiled_results_smc/*_phase1_compiled.json",
            "pass_game_logs/*SimpleMC*decisionOnly*_game_data*.json",
            "pass_game_logs/old/*SimpleMC*decisionOnly*_game_data*.json",
            "capabilities_1p_test_logs/*SimpleMC_500*_test_data.json",
            "capabilities_3p_test_logs/*SimpleMC_500*_test_data.json"]
    return sorted({p for pattern in keep for p in base.glob(pattern) if not p.name.startswith("ft:")})


def _calibration_files(base: Path) -> list[Path]:
    """The licence and the 84 per-model result CSVs (not the authors' category summary)."""
    return sorted([base / "LICENSE", *base.glob("results/mmlu_pro_*_eval_all_None.csv")])


#: dataset -> (glob of files to include, or a function listing them; mirror relpath -> upstream
#: path or None)
RULES = {
    "atlas": ("*", _atlas),
    "battery": ("*", _battery),
    "squad": ("dev-v*.json", lambda rel: None),
    "mmlu_pro": ("test.jsonl", lambda rel: None),
    "legalbench": ("*", _legalbench),
    "math": ("test.jsonl", lambda rel: None),
    "math500": ("math500.jsonl", lambda rel: "evaluation/data/math/test.jsonl"),
    "omni_math": ("omni_math_rule.jsonl", lambda rel: "omni_math_rule.jsonl"),
    "truthfulqa": ("truthfulqa.csv", lambda rel: "datasets/TruthfulQA.csv"),
    "strategyqa": ("strategyqa.json", lambda rel: "dataset/StrategyQA/task.json"),
    "selfaware": ("selfaware.json", lambda rel: "data/SelfAware.json"),
    "spar": (_spar_files, _spar),
    "calibration_study": (_calibration_files, lambda rel: rel),
}


def main(mirror: str, only: list[str] | None = None) -> None:
    out_dir = ROOT / "metacog" / "data" / "manifests"
    out_dir.mkdir(parents=True, exist_ok=True)
    for name, (pattern, upstream) in RULES.items():
        if only and name not in only:
            continue
        base = Path(mirror) / DATASETS[name].mirror_dir
        if callable(pattern):
            files = pattern(base)
        else:
            files = sorted(p for p in base.rglob(pattern) if p.is_file())
        entries = {}
        for p in files:
            rel = p.relative_to(base).as_posix()
            entries[rel] = {"sha256": sha256_file(p), "size": p.stat().st_size, "upstream": upstream(rel)}
        (out_dir / f"{name}.json").write_text(json.dumps({"dataset": name, "files": entries}, indent=1) + "\n")
        print(f"{name}: {len(entries)} files")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(ROOT.parent / "shared" / "data"), sys.argv[2:])
