"""Print guardscan's verdict on every hand-checked truth case, and the
agreement per pair, without pytest.

    PYTHONPATH=. python3 scripts/truth.py [--pair 0.5.9] [--cache-dir DIR] [--strict]

The cases live in ``tests/truth/sglang-*.json`` (see ``tests/truthcases.py``).
Each pair is scanned once per distinct ``--quantization`` value in its file,
on sm80 sm90 sm100 sm120, kernels on. A row is marked ``UNSAFE->SAFE`` when
the source says the choice does not run and guardscan calls it safe, and
``SAFE->UNSAFE`` when the source shows it running and guardscan rejects it.
A case marked ``open`` in its file is one guardscan cannot decide yet, with
the reason; its row says ``open``. ``--strict`` exits 1 when any other row is
so marked.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(_TESTS))

import realtrees
import truthcases


def _mark(answer: truthcases.Answer) -> str:
    if answer.case.open and not answer.agrees:
        return "open (" + ("UNSAFE->SAFE" if answer.called_safe_wrongly else "no") + ")"
    if answer.called_safe_wrongly:
        return "UNSAFE->SAFE"
    if answer.called_unsafe_wrongly:
        return "SAFE->UNSAFE"
    return "yes" if answer.agrees else "no"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pair", metavar="SGLANG_VERSION",
                        help="only the pair of this SGLang release, e.g. 0.5.9")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="guardscan cache (default: the tests' shared cache)")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when a case is called safe against the source, or unsafe")
    args = parser.parse_args(argv)
    cache_dir = args.cache_dir or realtrees.shared_cache_dir()

    paths = [p for p in truthcases.pair_files()
             if args.pair is None or truthcases.load_raw(p)["sglang"] == args.pair]
    if not paths:
        print(f"no truth file for sglang {args.pair}", file=sys.stderr)
        return 2
    totals = []
    violations = 0
    for path in paths:
        cases = truthcases.load_pair(path)
        realtrees.sglang_tree(cases[0].sglang)
        realtrees.flashinfer_tree(cases[0].flashinfer)
        answers = truthcases.answers(cases, cache_dir)
        title = f"sglang {cases[0].sglang} + flashinfer {cases[0].flashinfer}"
        print(title)
        header = ("option", "choice", "arch", "quant", "truth", "guardscan", "agree")
        rows = [(a.case.option, a.case.choice, a.case.arch,
                 (a.case.quantization or "-") + (f" model={a.case.model}" if a.case.model else ""),
                 a.case.verdict, a.verdict or "(none)", _mark(a)) for a in answers]
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
        agree = sum(a.agrees for a in answers)
        unsafe_as_safe = sum(a.called_safe_wrongly for a in answers)
        safe_as_unsafe = sum(a.called_unsafe_wrongly for a in answers)
        still_open = sum(a.called_safe_wrongly for a in answers if a.case.open)
        violations += unsafe_as_safe - still_open + safe_as_unsafe
        totals.append(f"{title}: agreement {agree}/{len(answers)} = {agree / len(answers):.1%}, "
                      f"unsafe called safe {unsafe_as_safe} ({still_open} of them open), "
                      f"supported called unsafe {safe_as_unsafe}")
        print()
    print("\n".join(totals))
    return 1 if args.strict and violations else 0


if __name__ == "__main__":
    sys.exit(main())
