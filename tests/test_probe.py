"""Hidden-state noise probe (metacog.probe).

The statistics and cache-key tests run everywhere. The probe tests need torch,
transformers and the SmolLM2-135M GGUF file (``python -m metacog.elicit.panel fetch
smollm2-135m``); they use few prompts, few trials and the first layers only.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from metacog import probe as H
from metacog.probe import cache as probe_cache
from metacog.probe.noise import _prompt_seed

PROMPTS = {
    "paris": "Is Paris the capital of France?",
    "westphalia": "Was the Peace of Westphalia signed in 1648?",
}
LAYERS = [0, 1, 2, 3]
MODEL = "smollm2-135m"


def _have_probe_stack() -> str | None:
    for mod in ("torch", "transformers", "gguf"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed (run scripts/install_probe.sh)"
    from metacog.elicit import panel
    if not panel.is_cached(MODEL):
        return f"{MODEL} is not in {panel.model_dir()} (python -m metacog.elicit.panel fetch {MODEL})"
    return None


needs_model = pytest.mark.skipif(_have_probe_stack() is not None,
                                 reason=str(_have_probe_stack()))


@pytest.fixture(scope="module")
def smol():
    return H.load_model(MODEL, download=False)


# --------------------------------------------------------------------------- no torch needed


def test_import_does_not_pull_torch():
    code = "import sys, metacog, metacog.probe, metacog.probe.study; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_as_prompts_and_errors():
    s = H.as_prompts(["a?", "b?"])
    assert list(s.index) == ["0", "1"] and list(s) == ["a?", "b?"]
    assert list(H.as_prompts({"x": "a?"}).index) == ["x"]
    with pytest.raises(ValueError, match="one string"):
        H.as_prompts("a?")
    with pytest.raises(ValueError, match="empty"):
        H.as_prompts({"x": "  "})
    with pytest.raises(ValueError, match="no prompts"):
        H.as_prompts([])


def test_probe_key_depends_on_every_setting():
    base = dict(sigma=0.01, n_trials=40, seed=0)
    k0, spec = H.probe_key("abc", PROMPTS, **base)
    assert spec["model_sha256"] == "abc" and spec["sigma"] == 0.01
    assert H.probe_key("abc", dict(PROMPTS), **base)[0] == k0  # same content, same key
    variants = [
        H.probe_key("abd", PROMPTS, **base),
        H.probe_key("abc", {**PROMPTS, "paris": "Is Lyon the capital of France?"}, **base),
        H.probe_key("abc", PROMPTS, sigma=0.03, n_trials=40, seed=0),
        H.probe_key("abc", PROMPTS, sigma=0.01, n_trials=20, seed=0),
        H.probe_key("abc", PROMPTS, sigma=0.01, n_trials=40, seed=1),
        H.probe_key("abc", PROMPTS, **base, chat=False),
        H.probe_key("abc", PROMPTS, **base, layers=[0, 1]),
    ]
    assert len({k for k, _ in variants} | {k0}) == len(variants) + 1


def test_model_sha_for_panel_name_needs_no_file():
    from metacog.elicit import panel
    assert H.model_sha256("smollm2-135m") == panel.get("smollm2-135m").sha256
    with pytest.raises(ValueError, match="Unknown local model"):
        H.model_sha256("no-such-model")


def test_cache_miss_without_compute_raises(tmp_path):
    with pytest.raises(FileNotFoundError, match="no cached probe result"):
        H.probe_cached(MODEL, PROMPTS, cache=tmp_path, compute=False)


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="sigma"):
        H.probe_cached(MODEL, PROMPTS, sigma=-0.1, cache="/nonexistent", compute=False)
    with pytest.raises(ValueError, match="n_trials"):
        H.probe_cached(MODEL, PROMPTS, n_trials=0, cache="/nonexistent", compute=False)
    with pytest.raises(ValueError, match="scale"):
        H.probe_cached(MODEL, PROMPTS, scale="per_token", cache="/nonexistent", compute=False)


def test_confidence_groups():
    r = pd.DataFrame({
        "item_id": ["a", "b", "c", "d", "e", "f", "a"],
        "probe": ["c0"] * 6 + ["c2"],
        "decision": ["yes", "no", "yes", "abstain", "no", "yes", "yes"],
        "confidence": [0.9, 0.85, 0.5, 0.95, 0.8, 0.79, 0.9],
        "correct": [1, 0, 1, np.nan, 1, 0, 0],
    })
    g = H.confidence_groups(r).set_index("item_id")["group"]
    assert g.to_dict() == {"a": "CC", "b": "OCW", "e": "CC"}
    with pytest.raises(ValueError, match="more than once"):
        H.confidence_groups(r, probe=None)
    with pytest.raises(ValueError, match="missing column"):
        H.confidence_groups(r.drop(columns="decision"))


def test_build_prompts():
    from metacog.tidy.items import Item

    items = [Item("q1", "audit", "Is water wet?", True), Item("q2", "audit", "Is fire cold?", False)]
    p = H.build_prompts(items, "Q: {question} A:")
    assert p.to_dict() == {"q1": "Q: Is water wet? A:", "q2": "Q: Is fire cold? A:"}
    frame = pd.DataFrame({"item_id": ["q1"], "question": ["Is water wet?"]})
    assert H.build_prompts(frame, str.upper).to_dict() == {"q1": "IS WATER WET?"}
    crit = H.build_prompts(items, H.SELF_CRITIQUE_TEMPLATE)
    assert "Is fire cold?" in crit["q2"] and "opposite" in crit["q2"]
    with pytest.raises(ValueError, match="neither a text"):
        H.build_prompts(items, "no placeholder")
    # default: the project's elicitation templates, as system + user messages
    from metacog.elicit import prompts

    c0 = H.build_prompts(items)
    assert c0["q1"] == prompts.get("c0").render(items[0])
    assert [m["role"] for m in c0["q1"]] == ["system", "user"] and "Is water wet?" in c0["q1"][1]["content"]
    c2 = H.build_prompts(items, H.SELF_CRITIQUE)
    assert "critique" in c2["q1"][1]["content"] and c2["q1"] != c0["q1"]
    k0, _ = H.probe_key("abc", c0, 0.01, 40, 0)
    assert k0 == H.probe_key("abc", H.build_prompts(items, "c0@1"), 0.01, 40, 0)[0]
    assert k0 != H.probe_key("abc", c2, 0.01, 40, 0)[0]


def test_length_control_pads_plain_to_critique_length():
    from metacog.tidy.items import Item

    items = [Item("q1", "audit", "Did Alexander Fleming discover penicillin in 1928?", "yes")]
    plain, crit = H.build_prompts(items)["q1"], H.build_prompts(items, H.SELF_CRITIQUE)["q1"]
    ctrl = H.length_control(items)["q1"]
    assert ctrl[0] == plain[0]  # same system message
    u_plain, u_crit, u_ctrl = plain[1]["content"], crit[1]["content"], ctrl[1]["content"]
    assert abs(len(u_ctrl) - len(u_crit)) <= 0.15 * (len(u_crit) - len(u_plain))
    assert "critique" not in u_ctrl.lower() and "opposite" not in u_ctrl.lower()
    # the plain instructions are all still there, in order, after the question
    assert u_ctrl.startswith(u_plain.split("\n\n")[0])
    assert u_ctrl.endswith(u_plain.split("\n\n", 1)[1])
    s = H.length_control(items, H.PLAIN_TEMPLATE, H.SELF_CRITIQUE_TEMPLATE)["q1"]
    assert isinstance(s, str) and abs(len(s) - len(H.build_prompts(items, H.SELF_CRITIQUE_TEMPLATE)["q1"])) < 60


def _synthetic(n_items=30, n_layers=4, seed=1):
    """A probe-shaped table: self-critique lowers displacement by 0.001 at every layer."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n_items):
        base = rng.normal(0.01, 0.002, n_layers)
        group = "CC" if i % 2 else "OCW"
        for cond, shift in (("plain", 0.0), ("self_critique", -0.001)):
            for l in range(n_layers):
                rows.append({"prompt_id": f"i{i}", "layer": l, "depth": l / (n_layers - 1),
                             "group": group, "condition": cond,
                             "displacement": base[l] + shift + rng.normal(0, 1e-4)})
    return pd.DataFrame(rows)


def test_layer_summary_means_and_cis():
    t = _synthetic()
    s = H.layer_summary(t, by=["condition", "group"], n_boot=500)
    assert len(s) == 2 * 2 * 4 and set(s["n"]) == {15}
    cell = t[(t.condition == "plain") & (t.group == "CC") & (t.layer == 2)]
    row = s[(s.condition == "plain") & (s.group == "CC") & (s.layer == 2)].iloc[0]
    assert row["mean"] == pytest.approx(cell["displacement"].mean())
    assert (s["ci_low"] < s["mean"]).all() and (s["mean"] < s["ci_high"]).all()
    plain = t[t.condition == "plain"]
    assert H.layer_summary(plain, by=None, n_boot=200).equals(H.layer_summary(plain, by=None, n_boot=200))
    # stacked runs (two conditions) are never silently averaged together
    with pytest.raises(ValueError, match=r"several rows per layer.*condition"):
        H.layer_summary(t, by="group")


def test_paired_difference_recovers_shift():
    t = _synthetic()
    d = H.paired_difference(t, n_boot=1000)
    assert len(d) == 4 and set(d["n"]) == {30}
    assert d["delta"].to_numpy() == pytest.approx(-0.001, abs=1e-4)
    assert (d["ci_high"] < 0).all() and (d["frac_below"] > 0.9).all()
    by_group = H.paired_difference(t, by="group", n_boot=200)
    assert set(by_group["group"]) == {"CC", "OCW"} and set(by_group["n"]) == {15}
    with pytest.raises(ValueError, match="no rows with condition == 'critique'"):
        H.paired_difference(t, a="critique")


def test_group_difference_null_and_shift():
    t = _synthetic(n_items=60)
    g = H.group_difference(t, n_boot=1000)
    assert set(g["condition"]) == {"plain", "self_critique"}
    # groups were drawn from one distribution: the CI should usually cover 0
    assert ((g["ci_low"] < 0) & (g["ci_high"] > 0)).mean() >= 0.5
    t2 = t.copy()
    t2.loc[t2.group == "OCW", "displacement"] += 0.005
    g2 = H.group_difference(t2, n_boot=1000)
    assert (g2["ci_low"] > 0).all() and g2["delta"].to_numpy() == pytest.approx(0.005, abs=1e-3)


# --------------------------------------------------------------------------- with SmolLM2


@pytest.mark.slow
@needs_model
def test_zero_sigma_gives_zero_displacement(smol):
    model, tok = smol
    t = H.noise_probe(model, tok, PROMPTS, sigma=0.0, n_trials=4, layers=LAYERS)
    assert len(t) == len(PROMPTS) * len(LAYERS)
    assert (t["displacement"].abs() < 1e-6).all() and (t["displacement_tokens"].abs() < 1e-6).all()
    assert (t["clean_norm"] > 0).all()


@pytest.mark.slow
@needs_model
def test_displacement_grows_with_sigma(smol):
    model, tok = smol
    t = pd.concat([H.noise_probe(model, tok, PROMPTS, sigma=s, n_trials=8, layers=LAYERS)
                   for s in (0.003, 0.01, 0.03)])
    w = t.pivot_table(index=["prompt_id", "layer"], columns="sigma", values="displacement")
    assert (w[0.003] < w[0.01]).all() and (w[0.01] < w[0.03]).all()
    # the input layer moves by exactly the injected noise: about sigma * rms * sqrt(d) / ||e||
    d = model.config.hidden_size
    l0 = t[(t.layer == 0) & (t.sigma == 0.01)]
    expected = 0.01 * H.embedding_rms(model) * np.sqrt(d) / l0["clean_norm"]
    assert np.allclose(l0["displacement"], expected, rtol=0.05)


@pytest.mark.slow
@needs_model
def test_batch_equals_one_trial_at_a_time(smol):
    """Per-trial values from the 41-row batch match separate plain forward passes."""
    import torch

    model, tok = smol
    text = PROMPTS["paris"]
    sigma, n_trials, seed = 0.01, 40, 3
    t = H.noise_probe(model, tok, [text], sigma=sigma, n_trials=n_trials, seed=seed,
                      layers=LAYERS, per_trial=True)
    # rebuild the noise independently and run trials 0 and 7 on their own
    ids = tok(H.format_prompt(tok, text), return_tensors="pt", add_special_tokens=False)["input_ids"]
    emb = model.get_input_embeddings()(ids)
    gen = torch.Generator().manual_seed(_prompt_seed(seed, H.format_prompt(tok, text)))
    noise = torch.randn((n_trials, *emb.shape[1:]), generator=gen) * (sigma * H.embedding_rms(model))
    with torch.no_grad():
        clean = model(inputs_embeds=emb, output_hidden_states=True).hidden_states
        for k in (0, 7):
            noisy = model(inputs_embeds=emb + noise[k:k + 1], output_hidden_states=True).hidden_states
            for l in LAYERS:
                c, n = clean[l][0], noisy[l][0]
                want_last = float((n[-1] - c[-1]).norm() / c[-1].norm())
                want_tok = float(((n - c).norm(dim=-1) / c.norm(dim=-1)).mean())
                got = t[(t.trial == k) & (t.layer == l)].iloc[0]
                assert got["displacement"] == pytest.approx(want_last, rel=1e-5, abs=1e-7)
                assert got["displacement_tokens"] == pytest.approx(want_tok, rel=1e-5, abs=1e-7)


@pytest.mark.slow
@needs_model
def test_batch_size_loop_matches_single_batch(smol):
    model, tok = smol
    a = H.noise_probe(model, tok, PROMPTS, sigma=0.01, n_trials=6, layers=LAYERS)
    b = H.noise_probe(model, tok, PROMPTS, sigma=0.01, n_trials=6, layers=LAYERS, batch_size=1)
    pd.testing.assert_frame_equal(a, b, rtol=1e-4, atol=1e-7)


@pytest.mark.slow
@needs_model
def test_deterministic_given_seed(smol):
    model, tok = smol
    run = lambda seed: H.noise_probe(model, tok, PROMPTS, sigma=0.01, n_trials=4, seed=seed,  # noqa: E731
                                     layers=LAYERS)
    a, b, c = run(0), run(0), run(1)
    pd.testing.assert_frame_equal(a, b, check_exact=True)
    assert not np.allclose(a["displacement"], c["displacement"], rtol=1e-6, atol=0)
    # a prompt gets the same noise whatever else is in the batch of prompts
    alone = H.noise_probe(model, tok, {"westphalia": PROMPTS["westphalia"]}, sigma=0.01,
                          n_trials=4, layers=LAYERS)
    both = a[a.prompt_id == "westphalia"].reset_index(drop=True)
    pd.testing.assert_frame_equal(alone, both, check_exact=True)


@pytest.mark.slow
@needs_model
def test_cache_round_trip_without_recomputation(tmp_path, smol, monkeypatch):
    kw = dict(sigma=0.01, n_trials=4, seed=0, layers=LAYERS, cache=tmp_path)
    first = H.probe_cached(MODEL, PROMPTS, **kw)
    assert first.attrs["from_cache"] is False
    assert len(list(tmp_path.glob("*.parquet"))) == 1 and len(list(tmp_path.glob("*.json"))) == 1
    assert set(first["model"]) == {MODEL}

    def boom(*a, **k):
        raise AssertionError("recomputed instead of reading the cache")

    monkeypatch.setattr(probe_cache.noise, "noise_probe", boom)
    monkeypatch.setattr(probe_cache.loading, "load_model", boom)
    again = H.probe_cached(MODEL, PROMPTS, **kw, compute=False)
    assert again.attrs["from_cache"] is True
    pd.testing.assert_frame_equal(first, again, check_exact=True)
    # the stored numbers are the probe's numbers
    monkeypatch.undo()
    model, tok = smol
    direct = H.noise_probe(model, tok, PROMPTS, sigma=0.01, n_trials=4, layers=LAYERS,
                           model_name=MODEL)
    pd.testing.assert_frame_equal(first, direct, check_exact=True)

    # a hit reads without torch: block the import in a fresh interpreter
    code = (
        "import sys\n"
        "class Block:  # refuses torch and transformers (scipy trips over a None in sys.modules)\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "from metacog import probe as H\n"
        f"t = H.probe_cached({MODEL!r}, {PROMPTS!r}, sigma=0.01, n_trials=4, seed=0, "
        f"layers={LAYERS!r}, cache={str(tmp_path)!r}, compute=False)\n"
        "print(len(t), t.attrs['from_cache'])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(len(first)), "True"]


@pytest.mark.slow
@needs_model
def test_chat_prompts_and_length_control_tokens(smol):
    from metacog.tidy.items import Item

    _, tok = smol
    items = [Item("q1", "audit", PROMPTS["paris"], "yes")]
    conds = {"plain": H.build_prompts(items), "critique": H.build_prompts(items, H.SELF_CRITIQUE),
             "control": H.length_control(items)}
    texts = {k: H.format_prompt(tok, v["q1"]) for k, v in conds.items()}
    assert all("careful expert" in t and PROMPTS["paris"] in t for t in texts.values())
    n = {k: len(tok(t, add_special_tokens=False)["input_ids"]) for k, t in texts.items()}
    assert n["critique"] - n["plain"] >= 30
    assert abs(n["control"] - n["critique"]) <= 0.2 * (n["critique"] - n["plain"])
