"""What ``metacog place`` does before the page: check its input, ask the model, write the tidy file.

:func:`check` refuses bad input in one sentence before anything is asked (the command prints it
and exits 2); :func:`collect` asks the panel's items through the response cache and writes the
new model's tidy table to ``<out>/responses.parquet``, which ``notebooks/place.md`` reads.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from metacog.pages.place import PANELS, PROBES, to_tidy

#: Why spar's panel cannot be joined (the command says this for ``--panel spar``).
SPAR_NOTE = ("spar's elicitation code (cma1114/spar_self_awareness) states no licence, so its prompts "
             "cannot be written into this repository, and placement needs them verbatim; only "
             "--panel calibration_study is reproduced")
N_MMLU_PRO = 12032


def check(panel: str, model: str, api_base: str | None, n_items: int, probe: str = "verbal_confidence",
          responses: str | None = None, max_tokens: int | None = None, concurrency: int = 1,
          timeout: float = 600.0, max_retries: int = 2) -> None:
    """Raise ValueError (one sentence) for input ``metacog place`` cannot run with.

    >>> check("spar", "local/smollm2-135m", None, 200)
    Traceback (most recent call last):
    ...
    ValueError: --panel spar: spar's elicitation code (cma1114/spar_self_awareness) states no licence, ...
    >>> check("calibration_study", "openai/my-model", None, 200)
    Traceback (most recent call last):
    ...
    ValueError: --model openai/my-model: an openai/ model needs --api-base URL ...
    >>> check("calibration_study", "openai/my-model", "http://127.0.0.1:8000/v1", 200) is None
    True
    """
    if max_tokens is not None and int(max_tokens) < 1:
        raise ValueError(f"--max-tokens {max_tokens}: a reply needs at least 1 token.")
    if int(concurrency) < 1:
        raise ValueError(f"--concurrency {concurrency}: at least 1 call in flight.")
    if not (math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"--timeout {timeout}: give a number of seconds above 0, e.g. --timeout 600.")
    if int(max_retries) < 0:
        raise ValueError(f"--max-retries {max_retries}: give 0 or more tries after the first.")
    if panel == "spar":
        raise ValueError(f"--panel spar: {SPAR_NOTE}.")
    if panel not in PANELS:
        raise ValueError(f"--panel {panel!r}: one of {list(PANELS)}.")
    if probe not in PROBES:
        raise ValueError(f"--probe {probe!r}: one of {list(PROBES)}.")
    if responses:
        if not Path(responses).expanduser().is_file():
            raise ValueError(f"--responses {responses}: no such file.")
        return
    if not re.fullmatch(r"(openai|local)/[^\s/][^\s]*", model or ""):
        raise ValueError(f"--model {model!r}: give openai/NAME (an OpenAI-compatible server, with "
                         f"--api-base) or local/NAME (the offline GGUF panel).")
    if model.startswith("openai/") and not api_base:
        raise ValueError(f"--model {model}: an openai/ model needs --api-base URL (e.g. "
                         f"http://127.0.0.1:8000/v1 for vLLM or llama.cpp's server).")
    if api_base and not re.match(r"https?://[^\s/]+", api_base):
        raise ValueError(f"--api-base {api_base!r}: give an http(s) URL, e.g. http://127.0.0.1:8000/v1.")
    if not 1 <= int(n_items) <= N_MMLU_PRO:
        raise ValueError(f"--n-items {n_items}: between 1 and {N_MMLU_PRO} (MMLU-Pro's test set).")


def collect(model: str, out: str | Path, *, api_base: str | None = None, n_items: int = 200, seed: int = 0,
            cache=None, max_tokens: int | None = None, concurrency: int = 4, timeout: float = 600.0,
            retries: int = 2, progress: bool = False) -> Path:
    """Ask ``model`` ``n_items`` of the panel's items and write ``<out>/responses.parquet`` (failed
    calls are rows with parse_status 'error' and their ``error``; the next run asks them again)."""
    from metacog.elicit.protocols.ask import ask, panel_items

    items = panel_items(n_items, seed)
    rows = ask(items, model, api_base=api_base, cache=cache, concurrency=concurrency, timeout=timeout,
               retries=retries, max_tokens=max_tokens, progress=progress)
    tidy = to_tidy(rows)
    path = Path(out) / "responses.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    tidy.to_parquet(path, index=False)
    return path


def model_of(responses: str | Path) -> str:
    """The one model of a tidy responses file (ValueError, one sentence, for none or several)."""
    from metacog.pages.place import load_new

    models = sorted(set(load_new(str(responses))["model"]))
    if len(models) != 1:
        raise ValueError(f"--responses {responses}: holds {len(models)} models ({models[:4]}); placement "
                         f"takes one.")
    return models[0]


def describe(responses: pd.DataFrame) -> str:
    """'120 items, 97 parsed, 3 failed calls' for the command's progress line."""
    one = responses[responses["probe"] == PROBES[0]]
    status = one["parse_status"].astype(str)
    return (f"{len(one)} items, {int((status == 'ok').sum())} parsed, "
            f"{int((status == 'error').sum())} failed calls")


def refuse_unusable(responses: str | Path, model: str, api_base: str | None = None,
                    timeout: float | None = None) -> None:
    """Raise ValueError (one sentence: what failed, that nothing was lost, how to rerun) when no
    reply of the responses file is usable, before a page is rendered on nothing. Failed calls are
    not kept as answers: the next run asks them again."""
    df = pd.read_parquet(responses) if str(responses).endswith((".parquet", ".pq")) else None
    if df is None:
        from metacog.pages.place import load_new

        df = load_new(str(responses))
    one = df[df["probe"] == PROBES[0]] if "probe" in df else df
    status = one["parse_status"].astype(str) if "parse_status" in one else pd.Series("ok", index=one.index)
    usable = (status == "ok") & one["confidence"].notna() if "confidence" in one else status == "ok"
    if len(one) and usable.any():
        return
    from metacog.elicit.failures import describe as what_failed
    from metacog.elicit.redaction import redact_url

    n, failed = len(one), int((status == "error").sum())
    where = redact_url(api_base) if api_base else None
    errors = one.loc[status == "error", "error"].fillna("") if "error" in one else pd.Series([""] * failed)
    why = what_failed(errors, n, timeout=timeout) if failed else ""
    what = (f"all {n} calls to {model}{' at ' + where if where else ''} failed: {why}" if n and failed == n
            else f"none of the {n} replies of {model} could be used ({why + '; ' if why else ''}"
                 f"{n - failed} unparsable or without a confidence)")
    raise ValueError(f"{what}; no page was made and nothing was lost: failed calls are asked again, "
                     f"so rerun the same command once the model answers.")


def render_html(notebook: str | Path) -> Path:
    """A self-contained HTML page from an executed notebook (prose, then each cell's shown
    output: tables, figures as inline PNG, text), written next to it as ``<stem>.html``.

    For ``metacog place``: one page without building the book (no jupyter-book, no nbconvert).
    Cross-references to other pages ({doc}`...`) are shown as plain text.
    """
    import html

    import nbformat
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    shown = MarkdownIt("commonmark", {"html": False}).enable("table")  # outputs: raw HTML as text
    nb = nbformat.read(str(notebook), as_version=4)
    parts = []
    for cell in nb.cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "markdown":
            parts.append(md.render(re.sub(r"\{(?:doc|term|ref)\}`([^`<]*?)(?:\s*<[^>]*>)?`", r"\1", cell.source)))
            continue
        if cell.cell_type != "code" or "remove-output" in tags or "remove-cell" in tags:
            continue
        alt = html.escape(" ".join(str(cell.get("metadata", {}).get("mystnb", {}).get("image", {})
                                       .get("alt", "figure")).split()), quote=True)
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "image/png" in data:
                parts.append(f'<img alt="{alt}" src="data:image/png;base64,{data["image/png"]}"/>')
            elif "text/html" in data:
                parts.append(data["text/html"])
            elif "text/markdown" in data:
                parts.append(shown.render(data["text/markdown"]))
            elif out.get("output_type") == "stream":
                parts.append(f"<pre>{html.escape(out.get('text', ''))}</pre>")
            elif "text/plain" in data:
                parts.append(f"<pre>{html.escape(data['text/plain'])}</pre>")
    page = Path(notebook).with_suffix(".html")
    page.write_text("<!doctype html><html><head><meta charset='utf-8'><title>Your model in the panel"
                    "</title><style>body{max-width:60rem;margin:auto;font-family:sans-serif}"
                    "table{border-collapse:collapse;font-size:85%}td,th{padding:2px 6px}</style>"
                    "</head><body>" + "\n".join(parts) + "</body></html>", encoding="utf-8")
    return page
