"""Public panels' elicitation protocols as data, and asking a new model the same way.

- :mod:`~metacog.elicit.protocols.calibration_study`: the LLM Calibration Study's MMLU-Pro
  prompt (verbatim, pinned to its upstream file), sampling settings, answer and confidence
  parsers, and grading with the study's own key.
- :mod:`~metacog.elicit.protocols.ask`: draw the panel's items and ask one model through the
  response cache (an OpenAI-compatible server, or a local GGUF model).
- :mod:`~metacog.elicit.protocols.local_reply`: a greedy local reply with every token's
  log-probability.

spar (the 17-model SimpleMC panel) is not reproduced: its code has no licence, so neither its
prompts nor its items may be written into this repository (see ``book/run_your_model.md``).
"""
