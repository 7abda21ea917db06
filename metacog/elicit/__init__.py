"""Binary confidence elicitation through litellm, with a resumable cache.

>>> from metacog.elicit import run
>>> df = run(items, models=["local/smollm2-135m"], probes=["prospective", "answer"])  # doctest: +SKIP

Importing this package is cheap: litellm (seconds to import) and llama_cpp are
imported only when a call actually has to be made.
"""

from metacog.elicit.cache import Cache, cache_key
from metacog.elicit.engine import BudgetError, default_grader, estimate_cost, redact, run
from metacog.elicit.prompts import PROBES, Template
from metacog.elicit.prompts import get as template
from metacog.elicit.prompts import show as show_template

__all__ = [
    "run", "Cache", "cache_key", "BudgetError", "estimate_cost", "default_grader", "redact",
    "PROBES", "Template", "template", "show_template",
]
