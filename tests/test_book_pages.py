"""Checks on the whole built book that need no browser: nothing loaded from the network, no
key-like string, and page hygiene (no NaN, warnings, machine paths, raw headers or template
glitches). The book is built once per session (the ``site`` fixture in conftest.py)."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # the first one builds the book


def test_no_page_loads_anything_from_the_network(site):
    import re

    remote = re.compile(r"<(script|img|iframe)[^>]+src=[\"']https?://|<link[^>]+href=[\"']https?://[^\"']+\.(css|js)")
    pages = list(site.rglob("*.html"))
    assert len(pages) >= 4
    for html in pages:
        hit = remote.search(html.read_text())
        assert hit is None, f"{html.relative_to(site)} loads {hit.group(0)!r} from the network"


def test_no_key_like_string_in_executed_notebooks_or_pages(site):
    import re

    key = re.compile(r"(sk-[A-Za-z0-9_\-]{16,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_\-]{30,})")
    executed = list((ROOT / "_build" / "src" / "notebooks").glob("*.ipynb"))
    assert executed
    for f in executed + list(site.rglob("*.html")):
        hit = key.search(f.read_text(errors="replace"))
        assert hit is None, f"{f} holds a key-like string"


def test_built_pages_show_no_nan_warnings_paths_raw_headers_or_template_glitches(site):
    from metacog.pages.hygiene import scan_html

    found = scan_html(site, strict=True)  # reprs, float noise, bare indexes, empty tables too
    if not found.empty:  # shown with -rx / -s so the lead can see what is left
        print(found.groupby(["page", "problem"]).size().to_string())
        print(found.to_string(index=False, max_colwidth=100))
    assert found.empty, f"{len(found)} page-hygiene problems on {found['page'].nunique()} pages"
