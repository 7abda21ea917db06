"""Render the built book in headless Chromium: theme, figures, typeset math, working search."""

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (make test installs it)"),
]


def chromium(tmp_path, *args):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
           "--no-first-run", "--disable-background-networking", "--disable-component-update",
           "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
           "--virtual-time-budget=20000", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_data_chapter_has_theme_figures_math_and_glued_numbers(site, tmp_path):
    page = site / "notebooks" / "data.html"
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert "bd-sidebar" in dom  # the sphinx-book-theme layout
    assert "<mjx-container" in dom  # MathJax ran, offline, and typeset the formulas
    assert dom.count("<img") >= 3  # the seaborn figures
    assert "47,151" in dom  # a glued number, computed in the notebook
    assert "mathjax/tex-chtml.js" in dom and "cdn" not in dom.lower().split("mathjax")[0][-200:]

    shot = tmp_path / "data.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,1600", page.as_uri())
    from PIL import Image

    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 1600)
    colours = img.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 200  # a rendered page, not a blank one


def test_sidebar_search_finds_a_word_from_a_chapter(site, tmp_path):
    url = (site / "search.html").as_uri() + "?q=unanimous"
    dom = chromium(tmp_path, "--dump-dom", url)
    assert 'id="search-results"' in dom
    assert "notebooks/data.html" in dom.split('id="search-results"')[1]
