"""A screenshot of a matrix page, for docs/matrix.md: headless Chromium opens
the page from ``file://`` with a cell's detail open, and saves a PNG.

    python scripts/matrix_screenshot.py m.html docs/matrix.png
    python scripts/matrix_screenshot.py m.html out.png --fragment history --size 1400x900

Without ``--fragment`` the detail shown is that of the first ``unsupported``
(else ``blocked``) cell of the newest release's table. The browser is driven
by ``scripts/headless.py`` (standard library only; Chromium from the system
packages, or ``$GUARDSCAN_CHROMIUM``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from headless import Browser, BrowserError

_FIRST_TO_AVOID = """(() => {
  const view = document.querySelector('.view.active');
  const cell = view.querySelector('td.v-unsupported') || view.querySelector('td.v-blocked');
  if (cell) { cell.click(); cell.scrollIntoView({block: 'center'}); return cell.id; }
  return null;
})()"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", type=Path, help="the matrix page (guardscan matrix -o m.html)")
    parser.add_argument("out", type=Path, help="the PNG to write")
    parser.add_argument("--fragment", default="",
                        help="open this fragment: history, change-N, or a cell's id")
    parser.add_argument("--size", default="1500x900", help="viewport, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    width, _, height = args.size.partition("x")
    try:
        with Browser(size=(int(width), int(height))) as browser:
            browser.call("Emulation.setDeviceMetricsOverride", width=int(width),
                         height=int(height), deviceScaleFactor=1, mobile=False)
            browser.open(args.page, args.fragment)
            shown = args.fragment or browser.evaluate(_FIRST_TO_AVOID) or "(no cell to avoid)"
            browser.screenshot(args.out)
    except (BrowserError, OSError, ValueError) as exc:
        print(f"matrix_screenshot: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {shown}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
