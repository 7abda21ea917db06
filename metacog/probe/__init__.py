"""The hidden-state noise probe (paper 2, Okutomi "Stable miscalibration", section 4 "internal probe").

The probe asks how far a model's internal state moves when its input embeddings are
jittered a little. For each prompt we add Gaussian noise to every input-token embedding,
run 40 noisy copies, and measure, at each layer, the relative displacement of the
hidden state from the clean run. A small displacement means the state is locally
stable. The paper compares confident-correct (CC) with overconfident-wrong (OCW) items
(no clear difference: confident errors can be stable) and plain with self-critique
prompts (self-critique lowers the displacement at every layer).

Choices the paper leaves open, fixed here (and recorded in every result table):

* **Noise scale.** ``noise ~ N(0, (sigma * s)^2)`` i.i.d. on every coordinate of every
  input-token embedding, where ``s`` is the RMS of the model's input-embedding matrix
  (``scale="embedding_rms"``; times the embedding scale factor for models such as
  Gemma that multiply embeddings by a constant). One ``s`` per model, so plain and
  self-critique prompts get the same absolute noise. ``scale="absolute"`` uses ``sigma``
  as the standard deviation itself.
* **Displacement.** For trial ``k`` and layer ``l``:
  ``||h_l(x + e_k) - h_l(x)|| / ||h_l(x)||`` at the **last prompt token** (the position
  that predicts the first answer token), averaged over the trials (``displacement``).
  The same ratio averaged over all token positions is ``displacement_tokens``.
* **Layers.** Layer 0 is the input embedding itself (its displacement is the injected
  noise, a reference); layer ``l >= 1`` is the output of decoder block ``l`` (the
  residual stream, before the final norm).
* **Prompt.** By default each prompt is wrapped in the model's chat template with the
  assistant turn opened (``chat=True``), as an instruct model would see it. The plain and
  self-critique prompts are the project's C0 and C2 elicitation templates (system + user
  messages); :func:`length_control` pads the plain prompt with neutral sentences to the
  self-critique prompt's length, because a longer prompt alone lowers the displacement.
* **Groups.** CC / OCW come from one reference log (the paper: gpt-4.1-mini's C0 answers),
  not from the probed model's own answers: :func:`confidence_groups`.
* **Batching.** The clean copy and the noisy copies run as one batch (41 rows for 40
  trials); ``batch_size`` splits the noisy trials into smaller forward passes with the
  same noise. The noise is drawn from a ``torch.Generator`` seeded from ``seed`` and the
  formatted prompt text, so a prompt gets the same noise wherever it appears.

Modules, one job each: :mod:`~metacog.probe.prompts` (prompts and the length control),
:mod:`~metacog.probe.loading` (GGUF models: find, hash, load), :mod:`~metacog.probe.noise`
(the probe), :mod:`~metacog.probe.cache` (the parquet cache keyed by content),
:mod:`~metacog.probe.design` (CC/OCW groups, prompt conditions, sigma sweeps) and
:mod:`~metacog.probe.summaries` (per-layer means and differences with bootstrap intervals
from :mod:`metacog.stats`); :mod:`~metacog.probe.study` records the miscalibration chapter's study
(``make probe``) and replays it for the book.

torch and transformers are imported lazily: ``import metacog.probe`` and
:func:`probe_cached` on a cache hit work without them (the book builds from the cache).
Install them with ``scripts/install_probe.sh``.
"""

from metacog.probe.cache import CACHE_ENV, cache_dir, probe_cached, probe_key
from metacog.probe.design import (HIGH_CONFIDENCE, compare_groups, compare_prompts, confidence_groups,
                                  probe_conditions, sigma_sweep)
from metacog.probe.loading import (embedding_rms, load_model, model_label, model_sha256, resolve_gguf,
                                   unload_models)
from metacog.probe.noise import (N_TRIALS, PROBE_VERSION, RESULT_COLUMNS, SCALES, SIGMA, SIGMAS,
                                 noise_probe)
from metacog.probe.prompts import (NEUTRAL_SENTENCES, PLAIN, PLAIN_TEMPLATE, SELF_CRITIQUE,
                                   SELF_CRITIQUE_TEMPLATE, as_prompts, build_prompts, format_prompt,
                                   length_control)
from metacog.probe.summaries import group_difference, layer_summary, paired_difference

__all__ = [
    "CACHE_ENV", "HIGH_CONFIDENCE", "NEUTRAL_SENTENCES", "N_TRIALS", "PLAIN", "PLAIN_TEMPLATE",
    "PROBE_VERSION", "RESULT_COLUMNS", "SCALES", "SELF_CRITIQUE", "SELF_CRITIQUE_TEMPLATE", "SIGMA",
    "SIGMAS", "as_prompts", "build_prompts", "cache_dir", "compare_groups", "compare_prompts",
    "confidence_groups", "embedding_rms", "format_prompt", "group_difference", "layer_summary",
    "length_control", "load_model", "model_label", "model_sha256", "noise_probe", "paired_difference",
    "probe_cached", "probe_conditions", "probe_key", "resolve_gguf", "sigma_sweep", "unload_models",
]
