"""The matrix page in a real browser (headless Chromium, driven over the
DevTools protocol by ``scripts/headless.py``): it opens from ``file://`` with
the network off, the table renders with a column per architecture, coloured
by verdict, a click opens a cell's evidence chain, the history marks where a
verdict changed and a click there shows both sides.

Without Chromium the tests are skipped, except where ``GUARDSCAN_REQUIRE_BROWSER``
is set: ``.ci/run`` sets it (and installs Chromium), so in CI a missing browser
is a failure, never a silent skip.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fixturetree import fixture

from guardscan.cli import main

ROOT = Path(__file__).resolve().parent.parent
OLD, NEW = fixture("diff_old"), fixture("diff_new")

pytestmark = pytest.mark.browser


def _headless() -> ModuleType:
    spec = importlib.util.spec_from_file_location("headless", ROOT / "scripts" / "headless.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["headless"] = module
    spec.loader.exec_module(module)
    return module


headless = _headless()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if headless.find_browser() is None:
        if os.environ.get("GUARDSCAN_REQUIRE_BROWSER"):
            pytest.fail("GUARDSCAN_REQUIRE_BROWSER is set and no Chromium was found")
        pytest.skip("no Chromium (apt-get install chromium); CI requires it")
    with headless.Browser() as driver:
        yield driver


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("matrix") / "m.html"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GUARDSCAN_CACHE_DIR", str(out.parent / "cache"))
        code = main(["matrix", str(OLD), str(NEW), "--arch", "sm90,sm120", "--no-kernels",
                     "-o", str(out), "-q", "-j", "1"])
    assert code == 0
    return out


def test_page_opens_and_renders_the_newest_table(browser: Any, page: Path) -> None:
    browser.open(page)
    assert browser.evaluate("document.title") == (
        "guardscan matrix: sglang 0.1.0 and sglang 0.2.0 on sm90 sm120")
    headers = browser.evaluate(
        "[...document.querySelectorAll('.view.active table thead th')].map(t => t.textContent)")
    assert headers == ["option / choice", "sm90", "sm120"]
    # the newest release is shown first; the other release's table is hidden
    assert browser.evaluate("document.querySelector('.view.active').id") == "view-r1"
    assert browser.evaluate("document.getElementById('view-r0').offsetParent") is None
    shown = browser.evaluate(
        "[...document.querySelectorAll('#view-r1 td.cell')].map(td => td.textContent)")
    assert len(shown) == 13 * 2
    colour = browser.evaluate(
        "getComputedStyle(document.getElementById("
        "'cell:sglang_0.2.0:--moe-runner-backend:x:sm90')).backgroundColor")
    assert colour == "rgb(217, 83, 79)"  # blocked
    legend = browser.evaluate(
        "[...document.querySelectorAll('.legend b')].map(b => b.textContent)")
    assert legend == ["blocked", "unsupported", "supported", "unknown", "*"]
    # one self-contained file: nothing was fetched
    assert browser.evaluate("performance.getEntriesByType('resource').length") == 0


def test_a_click_opens_the_cells_chain(browser: Any, page: Path) -> None:
    browser.open(page)
    assert browser.evaluate("document.getElementById('detail').hidden") is True
    browser.evaluate(
        "document.getElementById('cell:sglang_0.2.0:--moe-runner-backend:x:sm90').click()")
    assert browser.evaluate("document.getElementById('detail').hidden") is False
    title = browser.evaluate("document.querySelector('#detail h3').textContent")
    assert title == "--moe-runner-backend x"
    deciding = browser.evaluate(
        "document.querySelector('#detail li.st-decides code').textContent")
    assert deciding == "sglang/srt/layers/moe/runner.py:17"
    hops = browser.evaluate("document.querySelectorAll('#detail ol.chain li').length")
    assert hops == 6
    assert browser.evaluate("document.querySelector('#detail .cmd').textContent") == (
        f"guardscan explain x --option --moe-runner-backend --arch sm90 {NEW}")
    # Escape closes it
    browser.call("Input.dispatchKeyEvent", type="keyDown", key="Escape", code="Escape",
                 windowsVirtualKeyCode=27)
    assert browser.evaluate("document.getElementById('detail').hidden") is True


def test_history_marks_changes_and_shows_both_sides(browser: Any, page: Path) -> None:
    browser.open(page)
    browser.evaluate("document.querySelector('nav button[data-view=history]').click()")
    assert browser.evaluate("document.querySelector('.view.active').id") == "view-history"
    changed = browser.evaluate(
        "[...document.querySelectorAll('#view-history .chip.changed')].length")
    listed = browser.evaluate("document.querySelectorAll('ol.changes li').length")
    assert changed == listed == 3
    browser.evaluate("document.querySelector('#view-history .chip.changed').click()")
    text = browser.evaluate("document.getElementById('detail-body').innerText")
    assert "sglang 0.1.0 \u2192 sglang 0.2.0: blocked \u2192 supported (better)" in text
    sides = browser.evaluate(
        "[...document.querySelectorAll('#detail .sides li.st-decides code')]"
        ".map(c => c.textContent)")
    assert sides == ["sglang/srt/layers/moe/runner.py:14", "sglang/srt/layers/moe/runner.py:17"]


def test_a_fragment_opens_a_cell(browser: Any, page: Path) -> None:
    browser.open(page, "cell:sglang_0.1.0:--moe-runner-backend:x:sm120")
    assert browser.evaluate("document.querySelector('.view.active').id") == "view-r0"
    assert browser.evaluate("document.querySelector('#detail h3').textContent") == (
        "--moe-runner-backend x")
    assert browser.evaluate(
        "document.querySelector('td.open').id") == "cell:sglang_0.1.0:--moe-runner-backend:x:sm120"


@pytest.mark.real
@pytest.mark.releases
def test_the_release_range_page(browser: Any, tmp_path: Path) -> None:
    """The page of issue 23: sglang >=0.5.19 on sm90, sm100 and sm120 (each
    release scanned once into the test cache, then read from it)."""
    import realtrees

    out = tmp_path / "m.html"
    code = main(["matrix", "--releases", ">=0.5.19,<0.5.24", "--arch", "sm90,sm100,sm120",
                 "--cache-dir", str(realtrees.shared_cache_dir()), "-o", str(out), "-q"])
    assert code == 0
    browser.open(out)
    labels = browser.evaluate(
        "[...document.querySelectorAll('nav button')].map(b => b.textContent)")
    assert labels == ["sglang 0.5.19", "sglang 0.5.20", "sglang 0.5.21", "sglang 0.5.22",
                      "sglang 0.5.23", "History"]
    headers = browser.evaluate(
        "[...document.querySelectorAll('.view.active table thead th')].map(t => t.textContent)")
    assert headers == ["option / choice", "sm90", "sm100", "sm120"]
    browser.evaluate("document.getElementById("
                     "'cell:sglang_0.5.23:--fp4-gemm-backend:flashinfer_trtllm:sm120').click()")
    assert browser.evaluate("document.querySelector('#detail .verdict').textContent") == (
        "unsupported")
    browser.evaluate("document.querySelector('nav button[data-view=history]').click()")
    assert browser.evaluate("document.querySelectorAll('#view-history .chip.changed').length") \
        == browser.evaluate("document.querySelectorAll('ol.changes li').length") > 0
