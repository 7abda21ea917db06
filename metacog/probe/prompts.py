"""Prompts for the hidden-state probe: the plain and self-critique prompts built from items,
the length-matched control, and the text a model sees (its chat template, reply opened).

A prompt is a text (sent as the user message) or a chat, a list of ``{"role", "content"}``
messages. Nothing here needs torch.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

#: The default prompts are the project's elicitation templates for the forced-answer
#: policy C0 and the self-critique policy C2 (``metacog/elicit/templates/``), rendered
#: as system + user chat messages exactly as the models were asked.
PLAIN = "c0"
SELF_CRITIQUE = "c2"

#: Single-message alternatives (``{question}`` is replaced by the item text), following the
#: paper's description of the forced answer and the self-critique prompt.
PLAIN_TEMPLATE = (
    "Answer the following yes/no question.\n\n"
    "Question: {question}\n\n"
    "Reply with yes or no, then your probability (0 to 1) that your answer is correct."
)
SELF_CRITIQUE_TEMPLATE = (
    "Answer the following yes/no question. Before answering, critique yourself: check "
    "whether any evidence you would need is missing, and consider the opposite answer.\n\n"
    "Question: {question}\n\n"
    "Reply with yes or no, then your probability (0 to 1) that your answer is correct."
)

#: Neutral sentences for the length control (:func:`length_control`): a longer prompt
#: alone lowers the displacement, so a self-critique effect has to beat a plain prompt
#: padded to the same length with text that asks for nothing.
NEUTRAL_SENTENCES = (
    "This question comes from a general knowledge quiz.",
    "The quiz covers many different topics, such as history, science, geography and sport.",
    "Each question in the quiz has a short answer.",
    "The questions were written in plain English for a general audience.",
    "They are presented one at a time, in no particular order.",
    "Some questions are about recent events and others are about the distant past.",
    "The quiz has been used with many readers before.",
    "Each question appears exactly once in the collection.",
    "The collection was put together over several months.",
    "Questions differ in length, but most fit on a single line.",
)


def _is_chat(p: Any) -> bool:
    return (isinstance(p, (list, tuple)) and len(p) > 0
            and all(isinstance(m, Mapping) and {"role", "content"} <= set(m) for m in p))


def as_prompts(prompts: Any) -> pd.Series:
    """Prompts as an object Series indexed by prompt id.

    Accepts a Series, a mapping id -> prompt, or a sequence of prompts (ids '0', '1', ...).
    A prompt is a text (sent as the user message) or a chat, a list of
    ``{"role", "content"}`` messages.
    """
    if isinstance(prompts, str):
        raise ValueError("prompts: got one string; pass a list of prompt texts or a mapping id -> text.")
    if isinstance(prompts, pd.Series):
        s = prompts.copy()
    elif isinstance(prompts, Mapping):
        s = pd.Series(dict(prompts), dtype=object)
    elif isinstance(prompts, Sequence):
        s = pd.Series(list(prompts), index=[str(i) for i in range(len(prompts))], dtype=object)
    else:
        raise ValueError(
            f"prompts: expected a list of texts, a mapping id -> text or a Series, "
            f"got {type(prompts).__name__}."
        )
    if len(s) == 0:
        raise ValueError("prompts: no prompts given.")
    s.index = s.index.map(str)
    if s.index.duplicated().any():
        dup = list(s.index[s.index.duplicated()][:3])
        raise ValueError(f"prompts: duplicate prompt ids {dup}; ids must be unique.")
    bad = [i for i, t in s.items() if not ((isinstance(t, str) and t.strip()) or _is_chat(t))]
    if bad:
        raise ValueError(f"prompts: prompt(s) {bad[:3]} are empty, or neither a text nor a list "
                         "of {'role', 'content'} messages.")
    s.name = "prompt"
    return s.astype(object)

def format_prompt(tokenizer, prompt: str | list, *, chat: bool = True) -> str:
    """The text the model sees: the messages in the chat template with the reply opened.

    A text prompt is the user message; a list of messages is used as is. With
    ``chat=False`` a text prompt is passed raw (for base models without a template).
    """
    if not chat:
        if not isinstance(prompt, str):
            raise ValueError("chat=False needs text prompts, not lists of chat messages.")
        return prompt
    if not getattr(tokenizer, "chat_template", None):
        raise ValueError(
            "this tokenizer has no chat template (a base model?); call the probe with chat=False."
        )
    msgs = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else \
        [{"role": m["role"], "content": m["content"]} for m in prompt]
    return tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)

def _items_list(items) -> list:
    """Items as :class:`metacog.tidy.items.Item` objects (from Items, a frame or a mapping)."""
    from metacog.tidy.items import Item

    if isinstance(items, pd.DataFrame):
        missing = {"item_id", "question"} - set(items.columns)
        if missing:
            raise ValueError(f"items table is missing column(s) {sorted(missing)}.")
        return [Item(str(i), "probe", q, None) for i, q in zip(items["item_id"], items["question"])]
    if isinstance(items, Mapping):
        return [Item(str(k), "probe", v, None) for k, v in items.items()]
    out = list(items)
    for it in out:
        if not hasattr(it, "item_id") or not hasattr(it, "question"):
            raise ValueError(f"items: {it!r} is not an Item (needs item_id and question).")
    return out


def _renderer(template) -> Callable:
    """item -> prompt, for a {question} string, an elicitation template (name or object) or a function."""
    if isinstance(template, str) and "{question}" in template:
        return lambda it: template.replace("{question}", str(it.question).strip())
    if isinstance(template, str):
        from metacog.elicit import prompts as elicit_prompts

        try:
            template = elicit_prompts.get(template)
        except ValueError as e:
            raise ValueError(f"template {template!r}: neither a text with '{{question}}' nor an "
                             f"elicitation template ({e})") from None
    if hasattr(template, "render"):
        return lambda it: template.render(it)
    if callable(template):
        return lambda it: template(it.question)
    raise ValueError(f"template must be a string, an elicitation template or a function, "
                     f"got {type(template).__name__}.")


def build_prompts(items, template: Any = PLAIN) -> pd.Series:
    """Prompts indexed by item id, from items and a template.

    ``items``: a list of :class:`metacog.tidy.items.Item`, a DataFrame with ``item_id`` and
    ``question``, or a mapping item id -> question. ``template``: an elicitation template
    name ('c0', 'c2@1') or :class:`metacog.elicit.Template` (gives system + user chat
    messages), a text with ``{question}`` (gives the user message), or a function
    question -> prompt.
    """
    render = _renderer(template)
    return as_prompts({str(it.item_id): render(it) for it in _items_list(items)})


def _user_text(prompt) -> str:
    if isinstance(prompt, str):
        return prompt
    users = [m["content"] for m in prompt if m["role"] == "user"]
    if not users:
        raise ValueError("length_control: a chat prompt has no user message.")
    return users[-1]


def _pad(prompt, n_chars: int):
    """``prompt`` with neutral sentences (about ``n_chars`` characters) after its first paragraph."""
    filler, i = [], 0
    while n_chars > 0 and sum(len(f) + 1 for f in filler) < n_chars - 20:
        filler.append(NEUTRAL_SENTENCES[i % len(NEUTRAL_SENTENCES)])
        i += 1

    def pad_text(text: str) -> str:
        if not filler:
            return text
        head, sep, tail = text.partition("\n\n")
        return head + "\n\n" + " ".join(filler) + (sep + tail if sep else "")

    if isinstance(prompt, str):
        return pad_text(prompt)
    out = [dict(m) for m in prompt]
    j = max(k for k, m in enumerate(out) if m["role"] == "user")
    out[j]["content"] = pad_text(out[j]["content"])
    return out


def length_control(items, plain: Any = PLAIN, critique: Any = SELF_CRITIQUE) -> pd.Series:
    """The plain prompt padded with neutral sentences to the length of the self-critique prompt.

    Longer prompts alone lower the displacement (attention averages the noise over more
    positions), so the self-critique effect should be compared with this control: same
    instructions as ``plain``, about as many characters in the user message as ``critique``,
    and no request to critique.
    """
    p, c = build_prompts(items, plain), build_prompts(items, critique)
    return as_prompts({i: _pad(p[i], len(_user_text(c[i])) - len(_user_text(p[i])))
                       for i in p.index})
