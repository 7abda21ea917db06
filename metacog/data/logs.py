"""The registered multi-model confidence logs, each loaded as one tidy response table."""

from __future__ import annotations

import os

LOADERS = ("atlas", "battery", "spar", "calibration_study")


def load(name: str, *, path: str | os.PathLike | None = None):
    """The tidy response table of a multi-model confidence log.

    ``name`` is "atlas" (33 LLMs x 1,500 MMLU items, verbal confidence 0-100
    rescaled to [0, 1]) or "battery" (20 LLMs x 524 items, native KEEP/WITHDRAW
    and BET/NO_BET judgments as 1/0), "spar" (SimpleMC: answer-or-pass before
    answering, first- and third-person confidence, phase-1 answers) or
    "calibration_study" (84 LLMs x MMLU-Pro, verbal and logit confidence after
    answering). ``path`` overrides where the files are.
    """
    if name == "atlas":
        from metacog.data.atlas import load_atlas

        return load_atlas(path)
    if name == "battery":
        from metacog.data.battery import load_battery

        return load_battery(path)
    if name == "spar":
        from metacog.data.spar import load_spar

        return load_spar(path)
    if name == "calibration_study":
        from metacog.data.calibration_study import load_calibration_study

        return load_calibration_study(path)
    raise ValueError(
        f"metacog.data.load: unknown response log {name!r}; choose one of {LOADERS}. "
        f"Benchmarks (items, not responses) load through metacog.benchmarks.load_items."
    )
