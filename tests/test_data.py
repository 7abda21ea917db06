import hashlib
import http.server
import json
import shutil
import threading
import urllib.error
from functools import partial
from pathlib import Path

import pandas as pd
import pytest

import metacog.data as data
from metacog.tidy import schema
from metacog.data import battery, fetch as locate_mod
from metacog.data.registry import DATASETS


def test_atlas_is_33_models_and_47151_deduplicated_rows(mirror):
    df = data.load("atlas")
    assert df["model"].nunique() == 33
    assert len(df) == 47_151
    assert not df.duplicated(["model", "item_id"]).any()
    assert df["confidence"].dropna().between(0, 1).all()
    # Missing only where the authors' parser imputed 50 (tests/test_data_atlas_imputed.py).
    assert (df["confidence"].isna() == (df["parse_status"] == "imputed")).all()
    assert set(df["correct"].unique()) == {0.0, 1.0}
    assert df["domain"].nunique() == 6
    assert df.attrs["duplicates_dropped"] == 47_749 - 47_151
    assert list(df.columns[: len(schema.COLUMNS)]) == list(schema.COLUMNS)


def test_battery_is_20_models_by_524_items_complete(mirror):
    df = data.load("battery")
    assert df["model"].nunique() == 20
    kw = df[df["probe"] == "keep_withdraw"]
    assert kw["item_id"].nunique() == 524
    counts = kw.groupby("model").size()
    assert (counts == 524).all()
    assert set(df["confidence"].dropna().unique()) == {0.0, 1.0}
    # the only gaps: judgments of T6 items the model declined to answer
    gaps = df[df["confidence"].isna()]
    assert (gaps["parse_status"].astype(str) == "no_answer").all()
    assert set(gaps["track"].astype(str)) == {"t6_prospective"}
    assert df.loc[df["probe"] == "path_choice", "item_id"].nunique() == 72
    assert sorted(df["track"].unique()) == sorted(battery.TRACKS.values())


def test_every_battery_file_name_maps_to_one_of_20_models(mirror):
    names = [p.name for p in (mirror / "multimodel/battery/data/csvs").rglob("*.csv")]
    assert len(names) == 120
    assert len({battery.canonical_model(n) for n in names}) == 20
    with pytest.raises(data.DataFileError, match="SPELLINGS"):
        battery.canonical_model("Mystery Model 9 exec.csv")


def test_missing_dataset_names_every_place_and_both_fixes(monkeypatch, tmp_path):
    monkeypatch.delenv("METACOG_DATA_MIRROR", raising=False)
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path / "cache"))

    def offline(*a, **k):
        raise urllib.error.URLError("no network")

    monkeypatch.setattr(locate_mod.urllib.request, "urlopen", offline)
    with pytest.raises(data.DatasetNotFoundError) as err:
        data.load("atlas")
    msg = str(err.value)
    assert "'atlas'" in msg
    assert "METACOG_DATA_MIRROR is not set" in msg
    assert str(tmp_path / "cache" / "data" / "atlas") in msg
    assert "raw.githubusercontent.com/synthiumjp/metacognitive-profile-atlas/ca3118061d" in msg
    assert "be online" in msg and "export METACOG_DATA_MIRROR" in msg


def test_rebuilt_dataset_explains_it_cannot_be_downloaded(monkeypatch, tmp_path):
    monkeypatch.delenv("METACOG_DATA_MIRROR", raising=False)
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path))
    with pytest.raises(data.DatasetNotFoundError, match="rebuilt into the official JSON layout"):
        data.locate("squad")


@pytest.fixture
def served_mirror(mirror, monkeypatch):
    """Serve the mirror's battery files on loopback at upstream paths, as the pinned host would."""
    root = mirror / DATASETS["battery"].mirror_dir
    by_upstream = {info["upstream"]: root / rel for rel, info in data.manifest("battery").items()}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            from urllib.parse import unquote

            f = by_upstream.get(unquote(self.path.lstrip("/")))
            if f is None:
                self.send_error(404)
                return
            body = f.read_bytes()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    from urllib.parse import quote

    monkeypatch.setattr(type(DATASETS["battery"]), "url", lambda self, p: base + quote(p))
    yield root
    server.shutdown()


def test_download_fills_the_cache_checked_by_sha256(served_mirror, monkeypatch, tmp_path):
    monkeypatch.delenv("METACOG_DATA_MIRROR", raising=False)
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path))
    folder = data.locate("battery")
    assert folder == tmp_path / "data" / "battery"
    df = data.load("battery")
    assert df["model"].nunique() == 20
    assert not list(folder.rglob("*.part"))


def test_download_rejects_a_corrupt_file_and_keeps_nothing(served_mirror, monkeypatch, tmp_path):
    monkeypatch.delenv("METACOG_DATA_MIRROR", raising=False)
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path))
    files = data.manifest("battery")
    first = sorted(files)[0]
    bad = dict(files)
    bad[first] = {**files[first], "sha256": "0" * 64}
    monkeypatch.setattr(locate_mod, "manifest", lambda name: bad)
    with pytest.raises(data.DatasetNotFoundError, match="expected 0000"):
        data.locate("battery")
    assert not (tmp_path / "data" / "battery" / first).exists()


def test_truncated_csv_names_the_file_and_line(mirror, tmp_path):
    src = mirror / "multimodel/atlas"
    dst = tmp_path / "atlas"
    shutil.copytree(src, dst)
    victim = sorted((dst / "raw").glob("*.csv"))[0]
    lines = victim.read_text().splitlines(keepends=True)
    lines[10] = lines[10][: len(lines[10]) // 3] + "\n"  # cut a row short
    victim.write_text("".join(lines))
    with pytest.raises(data.DataFileError) as err:
        data.load("atlas", path=dst)
    assert str(victim) in str(err.value)
    assert "line 11" in str(err.value)


def test_file_cut_at_a_line_boundary_is_caught_by_size(mirror, tmp_path):
    dst = tmp_path / "atlas"
    shutil.copytree(mirror / "multimodel/atlas", dst)
    victim = sorted((dst / "raw").glob("*.csv"))[0]
    lines = victim.read_text().splitlines(keepends=True)
    victim.write_text("".join(lines[:-5]))
    with pytest.raises(data.DataFileError, match="truncated or a different version") as err:
        data.load("atlas", path=dst)
    assert str(victim) in str(err.value)


def test_malformed_jsonl_names_the_line(tmp_path):
    f = tmp_path / "x.jsonl"
    f.write_text('{"a": 1}\n{"a": 2\n')
    with pytest.raises(data.DataFileError, match=r"x.jsonl: line 2"):
        data.read_jsonl(f)


def test_manifests_cover_every_downloadable_dataset():
    for name, ds in DATASETS.items():
        files = data.manifest(name)
        if ds.package:
            assert files == {}
            continue
        assert files, name
        for rel, info in files.items():
            assert len(info["sha256"]) == 64
            if info["upstream"] is None:
                assert rel in ds.rebuilt, (name, rel)


def test_mirror_matches_pinned_sha256(mirror):
    for name in ("atlas", "math500", "truthfulqa"):
        assert locate_mod.verify(name).is_dir()


def test_sources_table_lists_every_dataset():
    s = data.sources()
    assert set(s["dataset"]) == set(DATASETS)
    assert s["licence"].str.len().gt(0).all()
    assert not s.set_index("dataset").loc["squad", "downloadable"]
    assert s.set_index("dataset").loc["atlas", "downloadable"]


def test_registry_fields_are_well_formed():
    for name, ds in DATASETS.items():
        assert ds.name == name
        assert isinstance(ds.rebuilt, tuple), name
        assert ds.package or len(ds.commit) == 40, name
        assert ds.licence and not ds.licence.startswith(("benchmarks/", "evaluation/")), name
        assert ds.rebuild_note or not ds.rebuilt, name


def test_battery_table_is_cached_and_rebuilt_when_a_file_is_added(mirror, monkeypatch, tmp_path):
    """The parsed table is kept as parquet; an added CSV changes the key, so it is read (here it
    is refused for its unknown model spelling) instead of the stale table being returned."""
    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path / "cache"))
    dst = tmp_path / "battery"
    shutil.copytree(mirror / "multimodel/battery", dst)
    first = data.load("battery", path=dst)
    cached = list((tmp_path / "cache" / "tidy").glob("battery-*.parquet"))
    assert len(cached) == 1
    again = data.load("battery", path=dst)
    pd.testing.assert_frame_equal(first, again)
    one = sorted((dst / "data/csvs/Executive").glob("*.csv"))[0]
    shutil.copy(one, one.with_name("Mystery Model 9 exec.csv"))
    with pytest.raises(data.DataFileError, match="Mystery Model 9"):
        data.load("battery", path=dst)


def test_cached_table_keeps_its_plain_notes(monkeypatch, tmp_path):
    """A table read back from the parquet cache carries the same attrs (counts such as Atlas's
    duplicates_dropped) as the one built; values JSON cannot keep as they are are left out."""
    from metacog.data import tidycache

    monkeypatch.setenv("METACOG_CACHE_DIR", str(tmp_path))
    built = pd.DataFrame({"model": ["a", "b"], "confidence": [0.2, 0.9]})
    built.attrs.update(duplicates_dropped=3, note="x", table=pd.DataFrame())
    first = tidycache.cached("demo", "k" * 20, lambda: built)
    again = tidycache.cached("demo", "k" * 20, lambda: pytest.fail("built twice"))
    assert first is built
    assert again.attrs == {"duplicates_dropped": 3, "note": "x"}
    pd.testing.assert_frame_equal(again, built, check_dtype=False)
