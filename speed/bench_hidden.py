"""Speed of the hidden-state noise probe: one batch of 40 noisy copies vs a loop of trials.

Prints seconds per prompt for batch_size=None (the 40 noisy copies and the clean one
in one forward pass), some intermediate batch sizes, and batch_size=1 (one noisy copy per
forward pass), plus the largest difference between their results.

Usage: .venv/bin/python speed/bench_hidden.py [--model smollm2-135m] [--prompts 2]
Needs torch/transformers (scripts/install_probe.sh) and the model file; exits 0 with a
message otherwise.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import time

PROMPTS = [
    "Is Paris the capital of France?",
    "Was the Peace of Westphalia signed in 1648?",
    "Is the Amazon river longer than the Nile?",
    "Did Marie Curie win two Nobel Prizes?",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--batch-sizes", default="none,10,1",
                    help="comma list; 'none' = all trials in one batch")
    a = ap.parse_args(argv)

    for mod in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(mod) is None:
            print(f"bench_hidden: skipped, {mod} is not installed (scripts/install_probe.sh)")
            return 0
    from metacog import probe as H
    from metacog.elicit import panel
    if not panel.is_cached(a.model.removeprefix("local/")) and not a.model.endswith(".gguf"):
        print(f"bench_hidden: skipped, {a.model} is not fetched (python -m metacog.elicit.panel fetch {a.model})")
        return 0
    import torch

    t0 = time.perf_counter()
    model, tok = H.load_model(a.model, download=False)
    print(f"model {a.model}: {model.config.num_hidden_layers} layers, hidden {model.config.hidden_size}, "
          f"loaded (GGUF dequantised to float32) in {time.perf_counter() - t0:.1f} s; "
          f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    prompts = PROMPTS[: a.prompts]
    H.noise_probe(model, tok, prompts[:1], n_trials=2, layers=[0, 1])  # warm-up
    results = {}
    for bs in a.batch_sizes.split(","):
        size = None if bs.strip() == "none" else int(bs)
        t0 = time.perf_counter()
        results[bs] = H.noise_probe(model, tok, prompts, sigma=0.01, n_trials=a.trials, batch_size=size)
        dt = (time.perf_counter() - t0) / len(prompts)
        label = f"one batch of {a.trials}+1" if size is None else f"batches of {size}"
        print(f"  {label:>20}: {dt:7.2f} s per prompt ({dt / a.trials * 1000:6.1f} ms per trial)")
    ref = results[next(iter(results))]
    for bs, t in results.items():
        diff = (t["displacement"] - ref["displacement"]).abs().max()
        print(f"  max |displacement difference| vs first setting, batch {bs}: {diff:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
