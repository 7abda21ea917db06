"""The price check that spares the direct HTTP path the litellm import (metacog/elicit/pricemap.py).

It may only ever err towards asking litellm: whenever it says a model is surely unpriced,
litellm itself must have no price for it, by either of the two lookups the engine makes
(``get_model_info`` for the price of each reply, ``cost_per_token`` for the estimate).
"""

import importlib.util
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from metacog.elicit import pricemap

if importlib.util.find_spec("litellm") is None:
    pytest.skip("litellm is not installed (pip install -e .[elicit])", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]

SERVED = ["openai/fake", "openai/my-model", "openai/Qwen/Qwen2.5-7B-Instruct", "openai/qwen2.5-7b-instruct",
          "openai/meta-llama/Llama-3.1-8B-Instruct", "openai/smollm2-135m", "openai/google/gemma-3-27b-it",
          "openai/gpt-oss-20b", "openai/served", "openai/gpt-35-turbo", "openai/ada"]


def _litellm_prices(litellm, model: str) -> bool:
    for ask in (lambda: litellm.get_model_info(model),
                lambda: litellm.cost_per_token(model=model, prompt_tokens=100, completion_tokens=10)):
        try:
            ask()
            return True
        except Exception:  # noqa: BLE001 - litellm raises its own not-mapped errors
            pass
    return False


def test_a_model_said_unpriced_has_no_price_in_litellm():
    from metacog.elicit.backend import get_litellm

    keys, _ = pricemap._bundled()
    names = list(SERVED)
    for k in random.Random(0).sample(keys, 60):  # names close to the map's: renamed, dated, tagged
        base = k.rsplit("/", 1)[-1]
        names += [f"openai/{k}", f"openai/{base.upper()}", f"openai/{base}-2099-01-01",
                  f"openai/ft:{base}:org::x", f"openai/x-{base}", f"openai/{base[:-1]}"]
    sure = [n for n in names if pricemap._absent(n)]
    assert "openai/fake" in sure and "openai/Qwen/Qwen2.5-7B-Instruct" in sure
    litellm = get_litellm()
    assert [n for n in sure if _litellm_prices(litellm, n)] == []
    # ... and what litellm prices, through a dated name or a fallback rule, is never said unpriced.
    for n in ("openai/gpt-4o-mini", "openai/GPT-4O-MINI", "openai/gpt-4o-mini-2099-01-01",
              "openai/o3-mini-foo"):
        assert _litellm_prices(litellm, n) and not pricemap._absent(n)
    assert not pricemap.surely_unpriced("openai/fake")  # litellm imported: it is asked instead


def test_without_the_bundled_map_nothing_is_sure(monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "False")
    pricemap._bundled.cache_clear()
    pricemap._absent.cache_clear()
    try:
        assert pricemap._absent("openai/fake") is False
    finally:
        pricemap._bundled.cache_clear()
        pricemap._absent.cache_clear()


def test_the_direct_path_does_not_import_litellm(tmp_path):
    """A run on one's own server with an unpriced model: answers, cost estimate, no litellm."""
    code = (
        "import sys\n"
        "from fakeserver import FakeServer\n"
        "from metacog.tidy.items import Item\n"
        "from metacog.elicit import run\n"
        "items = [Item(item_id=f'i{i}', benchmark='b', question=f'Is {i} prime?', gold='no') "
        "for i in range(6)]\n"
        "with FakeServer() as srv:\n"
        "    df = run(items, models=['openai/fake'], probes=['answer', 'c0'], api_base=srv.base_url,\n"
        f"             cache={str(tmp_path / 'c')!r}, max_cost=1.0, progress=True)\n"
        "assert (df['parse_status'] == 'ok').all(), df['error']\n"
        "assert df['cost_usd'].isna().all()\n"
        "print('litellm' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    env.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)  # the package sets it itself
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]
    assert "12 uncached remote call(s), estimated cost at most $0.0000" in out.stderr
