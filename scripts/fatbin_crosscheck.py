"""Cross-check guardscan's fatbin reader against NVIDIA's cuobjdump (docs/binaries.md).

    # the library members of the wheels, as files (scratch: never commit them)
    python scripts/fatbin_crosscheck.py members --out DIR WHEEL...
    # or only their fatbin sections, each cut to whole containers under a cap
    # (for a machine that takes a limited upload)
    python scripts/fatbin_crosscheck.py sections --out DIR --per-file-mb 48 WHEEL...
    # cuobjdump --list-elf / --list-ptx (and -all for ELF files) and this reader, timed
    python scripts/fatbin_crosscheck.py run --cuobjdump PATH --out results.json FILE...
    # the two listings compared, entry by entry
    python scripts/fatbin_crosscheck.py compare results.json

cuobjdump names a family SASS target without its ``f`` (``sm_100f`` is listed
as ``sm_100``; a family PTX target keeps it), so ours are compared in that
spelling; the number of entries this touched is printed. By default
cuobjdump lists the executable fatbin (``.nv_fatbin``) and only falls back to
the relocatable one (``__nv_relfatbin``) when there is none; ``-all`` lists
both. Both listings are compared with the matching subset of ours.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from guardscan.binaries import elf, fatbin
from guardscan.binaries.library import read_library_file
from guardscan.binaries.model import LibraryFacts
from guardscan.binaries.source import FileSource
from guardscan.binaries.wheel_members import library_members, open_member

_COPY = 16 << 20


def _flat(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")


def _copy_range(source, start: int, length: int, out) -> None:  # type: ignore[no-untyped-def]
    done = 0
    while done < length:
        step = min(_COPY, length - done)
        out.write(source.read_at(start + done, step))
        done += step


def _dist(wheel: Path) -> str:
    return "-".join(wheel.name.split("-")[:2])


def members(wheels: list[Path], out: Path) -> None:
    """Each library member of each wheel, as ``out/<dist>__<member>``."""
    out.mkdir(parents=True, exist_ok=True)
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in library_members(archive):
                target = out / f"{_dist(wheel)}__{_flat(info.filename)}"
                with archive.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst, _COPY)
                print(target, info.file_size, flush=True)


def sections(wheels: list[Path], out: Path, per_file_cap: int) -> None:
    """Each fatbin section of each library member, as a fatbin file under
    ``out/fatbins``; ``out/manifest.json`` says which were cut."""
    (out / "fatbins").mkdir(parents=True, exist_ok=True)
    manifest = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in library_members(archive):
                with open_member(wheel, archive, info) as source:
                    header = elf.read_header(source)
                    found = [s for s in elf.read_sections(source, header)
                             if s.name in fatbin.FATBIN_SECTIONS]
                    for section in sorted(found):
                        name = (f"{_dist(wheel)}__{_flat(info.filename)}__"
                                f"{_flat(section.name)}.fatbin")
                        target = out / "fatbins" / name
                        with open(target, "wb") as handle:
                            _copy_range(source, section.offset, section.size, handle)
                        item: dict[str, object] = {
                            "file": name, "wheel": wheel.name, "member": info.filename,
                            "section": section.name, "section_size": section.size,
                            "subset": None}
                        if section.size > per_file_cap:
                            item["subset"] = _cut(target, per_file_cap)
                        manifest.append(item)
                        print(name, section.size, flush=True)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))


def _spans(path: Path) -> list[tuple[int, int]]:
    """(start, end) of each container of the fatbin file at ``path``."""
    with FileSource(path) as source:
        _n, entries = fatbin.read_section(source, elf.Section(0, source.size, ".nv_fatbin", 1))
    starts: dict[int, int] = {}
    ends: dict[int, int] = {}
    for e in entries:
        starts[e.container] = min(starts.get(e.container, e.offset), e.offset)
        ends[e.container] = max(ends.get(e.container, 0),
                                e.offset + e.header_size + e.payload_size)
    return [(starts[c] - 16, ends[c]) for c in sorted(starts)]


def _cut(path: Path, cap: int) -> dict[str, object]:
    """Keep every k-th container of the fatbin file at ``path``, under ``cap`` bytes."""
    spans = _spans(path)
    step = max(1, -(-sum(e - s for s, e in spans) // cap))
    kept, size = [], 0
    whole = path.with_suffix(".whole")
    path.rename(whole)
    with open(whole, "rb") as src, open(path, "wb") as out:
        for index in range(0, len(spans), step):
            start, end = spans[index]
            if size + end - start <= cap:
                src.seek(start)
                out.write(src.read(end - start))
                size += end - start
                kept.append(index)
    whole.unlink()
    return {"containers_kept": kept, "containers_total": len(spans), "bytes": size}


def _cuobjdump(tool: str, args: list[str], path: Path) -> tuple[str, float]:
    start = time.perf_counter()
    run = subprocess.run([tool, *args, str(path)], capture_output=True, text=True, check=False)
    return run.stdout + run.stderr, time.perf_counter() - start


def run(tool: str, files: list[Path], out: Path, repeats: int) -> None:
    """cuobjdump and this reader on each file, timed (median of ``repeats``)."""
    version = subprocess.run([tool, "--version"], capture_output=True, text=True,
                             check=False).stdout.strip().splitlines()
    results: dict[str, object] = {"cuobjdump": version[-2:] if version else [], "files": {}}
    for path in files:
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            facts = read_library_file(str(path))
            times.append(time.perf_counter() - start)
        row: dict[str, object] = {"size": path.stat().st_size,
                                  "reader_s": statistics.median(times)}
        if isinstance(facts, LibraryFacts):
            row["entries"] = [[e.kind, e.target, e.loadable] for e in facts.entries]
        else:
            row["failure"] = facts.reason
        with open(path, "rb") as handle:
            is_fatbin = handle.read(4) == fatbin.MAGIC_BYTES
        listings = [("default", [])] + ([] if is_fatbin else [("all", ["-all"])])
        for label, extra in listings:
            texts, took = [], 0.0
            for option in ("--list-elf", "--list-ptx"):
                samples = [_cuobjdump(tool, [*extra, option], path) for _ in range(repeats)]
                texts.append(samples[0][0])
                took += statistics.median(s[1] for s in samples)
            row[label] = {"elf": texts[0], "ptx": texts[1], "s": took}
        results["files"][str(path)] = row  # type: ignore[index]
        print(f"{path.name}: reader {row['reader_s'] * 1e3:.1f} ms, cuobjdump "
              f"{row['default']['s'] * 1e3:.1f} ms", flush=True)  # type: ignore[index]
    out.write_text(json.dumps(results, indent=1))


_LISTED = re.compile(r"^(ELF|PTX) file\s+\d+:\s+\S*?\.(sm_\d+[a-z]?)\.(cubin|ptx)\s*$")


def cuobjdump_targets(elf_text: str, ptx_text: str) -> list[str]:
    """What cuobjdump lists, as ``sass:sm_90a`` / ``ptx:compute_90a``."""
    out = []
    for text in (elf_text, ptx_text):
        for line in text.splitlines():
            match = _LISTED.match(line.strip())
            if match is not None:
                kind, target, _ext = match.groups()
                out.append("ptx:" + target.replace("sm_", "compute_") if kind == "PTX"
                           else "sass:" + target)
    return out


def as_cuobjdump_spells(kind: str, target: str) -> tuple[str, bool]:
    """Our target in cuobjdump's spelling, and whether that changed it
    (cuobjdump drops the ``f`` of a family SASS target)."""
    if kind == "sass" and target.endswith("f"):
        return f"sass:{target[:-1]}", True
    return f"{kind}:{target}", False


def compare(results_path: Path) -> int:
    results = json.loads(results_path.read_text())
    files = entries = failures = respelled = 0
    print(f"{'file':<72} {'listing':<8} {'entries':>7} {'ours ms':>8} {'cuobjdump ms':>13}  agree")
    for name, row in results["files"].items():
        ours_all = row.get("entries")
        for label in ("default", "all"):
            if label not in row:
                continue
            theirs = cuobjdump_targets(row[label]["elf"], row[label]["ptx"])
            if ours_all is None:
                agree, ours = False, []
            else:
                chosen = ours_all
                if label == "default" and not name.endswith(".fatbin"):
                    loadable = [e for e in ours_all if e[2]]
                    chosen = loadable or ours_all  # cuobjdump's own fallback
                spelled = [as_cuobjdump_spells(kind, target) for kind, target, _l in chosen]
                ours = [s for s, _changed in spelled]
                respelled += sum(changed for _s, changed in spelled)
                agree = collections.Counter(ours) == collections.Counter(theirs)
            files += 1
            entries += len(theirs)
            failures += not agree
            print(f"{Path(name).name[:72]:<72} {label:<8} {len(theirs):>7} "
                  f"{row['reader_s'] * 1e3:>8.1f} {row[label]['s'] * 1e3:>13.1f}  "
                  f"{'yes' if agree else 'NO'}")
            if not agree:
                print("   ours:", sorted(collections.Counter(ours).items()), row.get("failure"))
                print("   cuobjdump:", sorted(collections.Counter(theirs).items()))
    print(f"{files} listings, {entries} entries listed by cuobjdump, {failures} disagreeing; "
          f"{respelled} of ours respelled sm_XYf -> sm_XY")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="step", required=True)
    mb = sub.add_parser("members")
    mb.add_argument("--out", type=Path, required=True)
    mb.add_argument("wheels", nargs="+", type=Path)
    sc = sub.add_parser("sections")
    sc.add_argument("--out", type=Path, required=True)
    sc.add_argument("--per-file-mb", type=int, default=48)
    sc.add_argument("wheels", nargs="+", type=Path)
    rn = sub.add_parser("run")
    rn.add_argument("--cuobjdump", default="cuobjdump")
    rn.add_argument("--out", type=Path, required=True)
    rn.add_argument("--repeats", type=int, default=3)
    rn.add_argument("files", nargs="+", type=Path)
    cm = sub.add_parser("compare")
    cm.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    if args.step == "members":
        members(args.wheels, args.out)
    elif args.step == "sections":
        sections(args.wheels, args.out, args.per_file_mb << 20)
    elif args.step == "run":
        run(args.cuobjdump, args.files, args.out, args.repeats)
    else:
        return compare(args.results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
