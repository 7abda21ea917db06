"""The two public panels: SPAR (SimpleMC, prospective) and the LLM Calibration Study (MMLU-Pro)."""

import os

import numpy as np
import pandas as pd
import pytest

import metacog.data as data
from metacog.tidy import schema
from metacog.cli import main as cli
from metacog.data import calibration_study as cs
from metacog.data import spar, tidycache
from metacog.data.fetch import manifest


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory):
    """Tidy-table caches go to a private folder, not the user's, for this module only (a
    session-wide setting would move every later test's model and result caches too)."""
    old = os.environ.get("METACOG_CACHE_DIR")
    os.environ["METACOG_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    yield
    if old is None:
        os.environ.pop("METACOG_CACHE_DIR", None)
    else:
        os.environ["METACOG_CACHE_DIR"] = old


@pytest.fixture(scope="module")
def spar_df(mirror, own_cache):
    return data.load("spar")


@pytest.fixture(scope="module")
def cal_df(mirror, own_cache):
    return data.load("calibration_study")


def _linked_copy(mirror, name, tmp_path, replace: dict):
    """A folder with every manifest file of ``name`` linked from the mirror, except ``replace``."""
    src = mirror / data.DATASETS[name].mirror_dir
    for rel in manifest(name):
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if rel in replace:
            target.write_bytes(replace[rel](src / rel))
        else:
            os.symlink(src / rel, target)
    return tmp_path


# --- SPAR -------------------------------------------------------------------------------


def test_spar_has_18_models_with_450_prospective_items_and_phase1_correctness(spar_df):
    pro = spar_df[spar_df["probe"] == "prospective"]
    per_model = pro.groupby("model", observed=True).agg(items=("item_id", "nunique"),
                                                        graded=("correct", "count"))
    assert len(per_model) == 18
    assert (per_model["items"] >= 450).all() and (per_model["graded"] >= 450).all()
    assert list(spar_df.columns[: len(schema.COLUMNS)]) == list(schema.COLUMNS)
    assert set(spar_df["probe"].unique()) == {"answer", "prospective", "verbal_confidence",
                                              "other_confidence"}
    assert (spar_df["benchmark"] == "simplemc").all() and (spar_df["backend"] == "log:spar").all()
    assert spar_df["item_id"].nunique() == 500 and spar_df["domain"].notna().all()


def test_spar_prospective_correct_is_the_same_models_phase1_correctness(spar_df):
    ans = spar_df[spar_df["probe"] == "answer"].set_index(["model", "item_id"])["correct"]
    pro = spar_df[spar_df["probe"] == "prospective"].set_index(["model", "item_id"])["correct"]
    joined = pro.to_frame("pro").join(ans.rename("ans"), how="left")
    assert joined["ans"].notna().all()
    assert (joined["pro"] == joined["ans"]).all()


def test_spar_p_yes_follows_the_digit_mapping(spar_df):
    pro = spar_df[(spar_df["probe"] == "prospective") & spar_df["p_yes"].notna()]
    assert pro["p_yes"].between(0, 1).all() and pro["model"].nunique() >= 10
    by = pro.groupby(["model", "decision"], observed=True)["p_yes"].mean().unstack()
    both = by.dropna()
    assert (both["answer"] > both["pass"]).all()
    # Both digit orders occur, so a fixed "1 = answer" reading would be wrong half the time.
    assert pro.groupby("decision", observed=True)["p_yes"].mean()["answer"] > 0.7


def test_p_answer_reads_the_mapping_and_folds_look_alike_digits():
    row = {"digit_mapping": {"1": "Pass", "2": "Answer"}, "probs": {"1": 0.6, "2": 0.2, "２": 0.2}}
    assert spar._p_answer(row) == pytest.approx(0.4)
    row = {"digit_mapping": {"1": "Answer", "2": "Pass"}, "probs": {"\n": 0.9, "<|im_end|>": 0.1}}
    assert np.isnan(spar._p_answer(row))


def test_canonical_model_names_meet_across_file_families():
    assert spar.canonical_model("gpt-4o-mini-2024-07-18") == spar.canonical_model("gpt-4o-mini")
    assert spar.canonical_model("anthropic-claude-opus-4.1") == "claude-opus-4.1"
    assert spar.canonical_model("claude-opus-4-1-20250805") == "claude-opus-4.1"
    assert spar.canonical_model("orig_llama-3.3-70b-instruct") == "llama-3.3-70b-instruct"
    assert spar.canonical_model("claude-sonnet-4-5-20250929_think") == "claude-sonnet-4.5-think"
    assert spar.canonical_model("gemini-2.5-flash_nothink") == "gemini-2.5-flash-nothink"
    assert spar.canonical_model("kimi-k2-0905") == "kimi-k2-0905"


def _runs(**cols):
    base = {"probe": "verbal_confidence", "model": "m", "folder": "main", "timestamp": 1.0,
            "temperature": 1.0, "valid": 500, "backup": False, "variant": None, "fine_tuned": False,
            "sha256": "x"}
    n = len(next(iter(cols.values())))
    return pd.DataFrame({k: cols.get(k, [v] * n) for k, v in base.items()} | {"file": cols["file"]})


def test_run_rule_prefers_main_folder_then_newest_then_non_copies_and_drops_partial_runs():
    runs = _runs(file=["old/new", "main_old", "main_new", "main_bak", "main_partial"],
                 folder=["old", "main", "main", "main", "main"], timestamp=[9.0, 1.0, 2.0, 5.0, 6.0],
                 backup=[False, False, False, True, False], valid=[500, 500, 500, 500, 40],
                 sha256=["a", "b", "c", "d", "e"])
    out = spar.choose_runs(runs, {}).set_index("file")
    assert out["chosen"].sum() == 1 and out.at["main_new", "chosen"]
    assert out.at["old/new", "reason"].startswith("in old/")
    assert out.at["main_old", "reason"] == "older run of the same model"
    assert out.at["main_bak", "reason"].startswith("backup or alternate copy")
    assert out.at["main_partial", "reason"].startswith("incomplete: 40")
    assert out["eligible"].sum() == 4 and not out.at["main_partial", "eligible"]


def test_run_rule_prefers_temperature_0_then_a_copy_over_nothing_and_drops_the_other_framing():
    runs = _runs(file=["t1_main_new", "t0_old", "t1_consider"], folder=["main", "old", "main"],
                 timestamp=[9.0, 1.0, 10.0], temperature=[1.0, 0.0, 1.0],
                 variant=["game", "game", "consider"], sha256=["a", "b", "c"])
    out = spar.choose_runs(runs, {}).set_index("file")
    assert out.at["t0_old", "chosen"] and out["chosen"].sum() == 1
    assert out.at["t1_main_new", "reason"] == "temperature 1 while a run at temperature 0 is used"
    assert out.at["t1_consider", "reason"].startswith("other framing ('consider'")
    # A copy is used when it is the model's only eligible run.
    runs = _runs(file=["copy_g", "consider"], backup=[True, False], variant=["game", "consider"],
                 sha256=["a", "b"])
    out = spar.choose_runs(runs, {}).set_index("file")
    assert out.at["copy_g", "chosen"] and not out.at["consider", "eligible"]


def test_game_variant_reads_the_run_parameters_not_only_the_name():
    assert spar.game_variant("m_consider_decisionOnly.json", {}) == "consider"
    assert spar.game_variant("m_decisionOnly.json", {"run_parameters": {"game_frame": False}}) == "consider"
    assert spar.game_variant("m_decisionOnly.json", {"run_parameters": {"game_frame": True}}) == "game"
    assert spar.game_variant("m_decisionOnly.json", {"run_parameters": {}}) == "game"  # before the switch
    same = spar.wording({"initial_setup_explanation": "text"})
    assert same == spar.wording({"initial_setup_explanation": "text"}) != spar.wording(
        {"initial_setup_explanation": "other"})
    assert spar.wording({}) is None


def test_spar_runs_table_picks_one_run_per_model_and_probe(mirror):
    runs = spar.spar_runs()
    chosen = runs[runs["chosen"]]
    assert not chosen.duplicated(["model", "probe"]).any()
    assert set(runs["file"]) == {r for r in manifest("spar") if "/" in r}
    assert (runs.loc[~runs["chosen"], "reason"] != "").all()
    assert not chosen["file"].str.contains(r"_consider_|-ft_").any()
    opus = runs[(runs["model"] == "claude-opus-4.1") & (runs["probe"] == "answer")]
    assert len(opus) == 2 and "same content as the chosen file" in set(opus["reason"])
    # The old temperature-0 llama-3.1-8b game was scored against an earlier phase-1 run.
    llama = runs[(runs["model"] == "llama-3.1-8b-instruct") & (runs["probe"] == "prospective")]
    assert llama["reason"].str.startswith("scored against another phase-1 run (42").any()


def test_spar_games_are_the_points_game_at_temperature_0_where_there_is_one(mirror):
    runs = spar.spar_runs()
    games = runs[runs["probe"] == "prospective"]
    chosen = games[games["chosen"]].set_index("model")
    assert (chosen["variant"] == "game").all() and chosen["temperature"].isin([0.0, 1.0]).all()
    # Every model with an eligible run at temperature 0 is used at 0.
    has_zero = set(games.loc[games["eligible"] & (games["temperature"] == 0), "model"])
    assert has_zero == set(chosen.index[chosen["temperature"] == 0]) and len(has_zero) == 12
    assert set(chosen.index[chosen["temperature"] == 1]) == {
        "claude-sonnet-4.5-think", "gpt-4.1", "gpt-4o", "gpt-4o-mini", "llama-3.1-8b-instruct",
        "llama-3.3-70b-instruct"}
    # llama-3.3-70b: its newest file is the no-points framing (only run_parameters say so);
    # its standard game is the '_g' copy.
    assert chosen.at["llama-3.3-70b-instruct", "file"].endswith("_1762380082_game_data_g.json")
    other = games[(games["model"] == "llama-3.3-70b-instruct") & (games["variant"] == "consider")]
    assert len(other) == 1 and "_consider_" not in other["file"].iloc[0]
    assert chosen.at["llama-3.1-8b-instruct", "file"].endswith("_game_data_bak.json")
    assert chosen.at["qwen3-235b-a22b-2507", "folder"] == "old"


def test_spar_rows_carry_variant_wording_and_temperature(spar_df):
    pro = spar_df[spar_df["probe"] == "prospective"]
    assert pro["model"].nunique() == 18
    assert (pro["variant"] == "game").all() and pro["wording"].notna().all()
    temps = pro.groupby("model", observed=True)["temperature"].agg(["min", "max"])
    assert (temps["min"] == temps["max"]).all() and set(temps["min"]) == {0.0, 1.0}
    assert temps.at["llama-3.3-70b-instruct", "min"] == 1.0 and temps.at["kimi-k2-0905", "min"] == 0.0
    assert spar_df.loc[spar_df["probe"] != "prospective", "variant"].isna().all()


def test_spar_cached_table_equals_the_built_one(spar_df):
    again = data.load("spar")  # read back from the parquet cache the fixture wrote
    pd.testing.assert_frame_equal(again, spar_df)


def test_spar_temperature_check_compares_each_models_two_games(mirror):
    check = spar.spar_temperature_check()
    assert set(check["model"]) == {"deepseek-chat-v3.1", "kimi-k2-0905", "qwen3-235b-a22b-2507"}
    rates = check[check["statistic"] == "answer_rate"].set_index(["model", "temperature"])
    assert len(rates) == 6 and (rates["n"] >= 450).all()
    assert ((rates["ci_low"] <= rates["estimate"]) & (rates["estimate"] <= rates["ci_high"])).all()
    # Each side is the run the rule ranks first at that temperature; it is the chosen one at 0.
    runs = spar.spar_runs().set_index("file")
    for file in rates.xs(0.0, level="temperature")["file"]:
        assert runs.at[file, "chosen"] and runs.at[file, "temperature"] == 0.0
    for file in rates.xs(1.0, level="temperature")["file"]:
        assert runs.at[file, "eligible"] and runs.at[file, "temperature"] == 1.0
    agree = check[check["statistic"] == "agreement"]
    assert len(agree) == 3 and agree["temperature"].isna().all() and agree["estimate"].between(0, 1).all()
    assert set(check["statistic"]) == {"answer_rate", "auroc", "auroc_p_yes", "agreement"}


def test_spar_truncated_log_names_the_file(mirror, tmp_path):
    rel = next(r for r in manifest("spar") if r.startswith("pass_game_logs/gpt-4.1"))
    folder = _linked_copy(mirror, "spar", tmp_path, {rel: lambda p: p.read_bytes()[:20_000]})
    with pytest.raises(data.DataFileError, match=rf"{rel}: line \d+: not valid JSON"):
        spar.load_spar(folder)


# --- LLM Calibration Study ----------------------------------------------------------------


def test_calibration_study_is_80_models_by_12032_mmlu_pro_items(cal_df):
    verbal = cal_df[cal_df["probe"] == "verbal_confidence"]
    counts = verbal.groupby("model", observed=True)["item_id"].nunique()
    assert len(counts) >= 80 and (counts == 12_032).all()
    from metacog.benchmarks import load_items

    items = {it.item_id: it.domain for it in load_items("mmlu_pro")}
    sample = verbal.drop_duplicates("item_id")
    assert set(sample["item_id"]) == set(items)
    assert (sample["domain"].astype(str) == sample["item_id"].astype(str).map(items)).all()
    assert set(cal_df["probe"].unique()) == {"verbal_confidence", "logit_confidence",
                                             "linguistic_confidence"}
    assert cal_df["confidence"].dropna().between(0, 1).all()
    assert (cal_df["benchmark"] == "mmlu_pro").all()


def test_calibration_study_grades_with_its_own_key(cal_df, mirror):
    keys = cs.calibration_study_key_differences()
    assert len(keys) == 173 and (keys["study_answer"] != keys["mmlu_pro_answer"]).all()
    one = cal_df[(cal_df["model"] == "gpt-4.1") & (cal_df["probe"] == "verbal_confidence")]
    one = one.set_index(one["item_id"].astype(str))
    raw = pd.read_csv(mirror / "multimodel/calibration_study/results/mmlu_pro_gpt-4.1_eval_all_None.csv")
    expected = (raw["extracted_answer"] == raw["correct_answer"]).to_numpy(dtype=float)
    assert (one["correct"].to_numpy() == expected).all()
    row = keys.iloc[0]
    assert one.at[row["item_id"], "correct"] == float(
        raw.at[row["line"] - 2, "extracted_answer"] == row["study_answer"])


def test_calibration_study_out_of_range_confidence_is_nan_and_counted(cal_df, mirror):
    summary = cs.calibration_study_summary().set_index("model")
    assert not summary.at["phi-4", "included"] and "phi-4" not in set(cal_df["model"])
    assert summary["verbal_confidence_out_of_range"].sum() > 0
    gemma = cal_df[(cal_df["model"] == "gemma-2b-it") & (cal_df["probe"] == "verbal_confidence")]
    s = summary.loc["gemma-2b-it"]
    assert gemma["confidence"].isna().sum() == s["verbal_confidence_missing"] + s[
        "verbal_confidence_out_of_range"]
    assert s["verbal_confidence_out_of_range"] > 0
    # A probe with no values for a model (no logits from the API) is left out, not all-NaN.
    claude = cal_df[cal_df["model"] == "claude-3-7-sonnet-20250219"]
    assert "logit_confidence" not in set(claude["probe"])


def test_calibration_study_misaligned_or_truncated_file_is_refused(mirror, tmp_path):
    rel = "results/mmlu_pro_gpt-4.1_eval_all_None.csv"

    def swap_category(p):
        lines = p.read_text().splitlines(keepends=True)
        lines[5] = lines[5].replace(",business,", ",biology,", 1)
        return "".join(lines).encode()

    folder = _linked_copy(mirror, "calibration_study", tmp_path / "a", {rel: swap_category})
    with pytest.raises(data.DataFileError, match=rf"{rel}: line 6: category 'biology'"):
        cs.load_calibration_study(folder)
    cut = lambda p: b"".join(p.read_bytes().splitlines(keepends=True)[:5000])  # noqa: E731
    folder = _linked_copy(mirror, "calibration_study", tmp_path / "b", {rel: cut})
    with pytest.raises(data.DataFileError, match=rf"{rel}: 4,999 data rows .* truncated"):
        cs.load_calibration_study(folder)


# --- registry, CLI, cache -------------------------------------------------------------------


def test_cli_lists_and_verifies_both_panels(mirror, capsys):
    assert cli(["data", "--verify", "spar", "calibration_study"]) == 0
    out = capsys.readouterr().out
    assert "spar: ok" in out and "calibration_study: ok" in out
    assert cli(["data"]) == 0
    listing = capsys.readouterr().out
    assert "spar" in listing and "cma1114/spar_self_awareness@f770ffb046" in listing
    src = data.sources().set_index("dataset")
    assert src.at["calibration_study", "licence"] == "MIT" and src.at["spar", "downloadable"]
    assert src.at["calibration_study", "files"] == 85


def test_corrupt_cache_file_is_rebuilt(mirror, spar_df):
    key = tidycache.cache_key(("spar",), (data.locate("spar"),), spar.LOADER_VERSION)
    path = tidycache.cache_file("spar", key)
    assert path.is_file()
    path.write_bytes(b"not a parquet file")
    again = data.load("spar")
    assert again.equals(spar_df) and (again.dtypes == spar_df.dtypes).all()
    assert path.read_bytes()[:4] == b"PAR1"
    assert data.load("spar").equals(spar_df)  # now from the rebuilt cache


def test_second_load_reads_the_cache_and_equals_the_build(mirror, cal_df):
    folders = (data.locate("calibration_study"), data.locate("mmlu_pro"))
    key = tidycache.cache_key(("calibration_study", "mmlu_pro"), folders, cs.LOADER_VERSION)
    assert tidycache.cache_file("calibration_study", key).is_file()
    cached = data.load("calibration_study")
    assert cached.equals(cal_df) and list(cached.columns) == list(cal_df.columns)
    assert (cached.dtypes == cal_df.dtypes).all()
