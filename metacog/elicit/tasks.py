"""What one call is: :class:`Task` (model x item x probe x sample) and the run's :class:`Settings`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from metacog.elicit import prompts
from metacog.elicit.cache import cache_key
from metacog.tidy.items import Item

DEFAULT_MODELS = ("local/smollm2-135m",)
LOCAL_PREFIX = "local/"

#: Benchmarks whose attempts are code: they are asked with the '*_code' answer templates, and
#: conformance means "wrote code", not "wrote 'Final answer:'".
CODE_BENCHMARKS = frozenset({"scicode"})


@dataclass
class Task:
    """One call to make (or replay): model x item x probe x sample."""

    model: str
    item: Item
    probe: str
    sample: int
    template: prompts.Template
    messages: list[dict[str, str]]
    params: dict[str, Any]
    key: str
    order: int = 0
    #: Request options sent with ``params`` but left out of the key: they ask the server for
    #: more alongside the reply (token log-probabilities of answer probes), not for another
    #: reply, so requests recorded before they were sent keep their keys and replay.
    wire: dict[str, Any] = field(default_factory=dict)
    #: The option letters of a multiple-choice item ('ABCD...'), '' otherwise.
    letters: str = ""

    def request(self) -> dict[str, Any]:
        """What the cache stores of the call: the key's inputs, and the options sent outside it."""
        return {"model": self.model, "messages": self.messages, "params": self.params,
                "template": self.template.tag, **({"wire": self.wire} if self.wire else {})}


@dataclass
class Settings:
    """How a run asks: server, concurrency, timeouts, retries, budget and sampling."""

    api_base: str | None = None
    concurrency: int = 8
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 1.0  # first retry waits about this many seconds (x0.5..1.5 jitter), doubling
    max_backoff: float = 30.0
    retry_failed: bool = False
    max_cost: float | None = None
    temperature: float = 0.0
    max_tokens: int | None = None
    seed: int = 0
    logprobs: bool = True
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)  # further litellm kwargs (never keys)
    router: Any = None  # a metacog.elicit.router.RouterSpec: model names served by deployments
    transport: str = "auto"  # 'auto': the direct HTTP path where it applies; 'litellm': always litellm
    batch: bool = False  # send uncached calls of openai/<name> models in provider batches (half price)
    batch_poll: float = 5.0  # first wait (s) between looks at a batch; grows x1.5 up to 60 s
    batch_wait: float | None = None  # stop waiting for batches after this many seconds (None: until done)


def is_local(model: str) -> bool:
    """True for the offline panel ('local/<name>')."""
    return model.startswith(LOCAL_PREFIX)


def _params(template: prompts.Template, model: str, sample: int, s: Settings) -> dict[str, Any]:
    p: dict[str, Any] = {
        "temperature": s.temperature,
        "max_tokens": int(s.max_tokens or template.max_tokens),
        "seed": int(s.seed) + int(sample),
    }
    if template.kind in ("judgment", "confidence") and s.logprobs and not is_local(model):
        p["logprobs"] = True
        p["top_logprobs"] = 5
    p.update(s.extra)
    return p


def _wire(template: prompts.Template, model: str, s: Settings, params: dict[str, Any]) -> dict[str, Any]:
    """Log-probabilities for answer probes (letter probabilities and the mean token probability),
    outside the cache key; judgment probes already ask for them in ``params``."""
    if template.kind != "answer" or not s.logprobs or is_local(model) or "logprobs" in params:
        return {}
    return {"logprobs": True, "top_logprobs": 5}


def option_letters(item: Item) -> str:
    """'ABCD...' for an item shown with lettered options (``meta['options']``), else ''."""
    opts = item.meta.get("options") if item.context_kind == "options" else None
    return "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[: len(opts)] if isinstance(opts, (list, tuple)) else ""


def make_task(model: str, item: Item, probe: str, sample: int, s: Settings, order: int = 0,
              **fill: Any) -> Task:
    """The :class:`Task` asking ``model`` the ``probe`` on ``item`` (its cache key included)."""
    t = prompts.get(probe)
    if item.benchmark in CODE_BENCHMARKS and t.id in ("answer", "answer_no_context"):
        t = prompts.get(f"{t.id}_code")  # ask for a code block; the probe keeps its name
    messages = t.render(item, **fill)
    params = _params(t, model, sample, s)
    return Task(model, item, t.id.removesuffix("_code"), sample, t, messages, params,
                cache_key(model, messages, params, t.tag), order, _wire(t, model, s, params),
                option_letters(item))
