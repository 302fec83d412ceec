"""kernels (form 9): the cubin package a release pins, read from its file list and kernel tables.

What it recognises
    A FlashInfer function that fetches precompiled kernels with its artifact
    loader (``get_artifact(...)``) and names, in that call or in a value it
    assigns, a class attribute holding an artifact directory
    (``f"{ArtifactPath.TRTLLM_GEN_BMM}/checksums.txt"``, the attribute
    ``TRTLLM_GEN_BMM: str = "c21ddd.../batched_gemm-91e0ba0-da44fdf/"`` read
    from ``flashinfer/artifacts.py`` by qualified name). When the release pins
    ``flashinfer-cubin`` (``flashinfer_cubin==0.6.12`` in sglang 0.5.14's
    ``Requires-Dist``), that package's zip directory says which cubins exist
    under the directory, and its ``flashinferMetaInfo.h`` kernel table which
    SM each kernel entry is for: the architecture tags in cubin names
    (``..._sm100f.cubin``, ``fmhaSm100aKernel_...``) and in the table
    (``SmVersion::Sm103a``, ``kSM_100f``). The fact is their union:
    ``Sm100a`` exactly 10.0, ``Sm100f`` the 10.x family, ``Sm103a`` exactly
    10.3 (``artifacts.arch_name_predicate``). Tier b, kind ``artifacts``, the
    table's member path and line as evidence.
Why it matters
    FlashInfer 0.6.7-0.6.18 do not carry the trtllm-gen kernels: the JIT spec
    compiles a runner for majors ``[10, 12]`` around cubins loaded at run time,
    so the Python source alone cannot tell which archs have kernels. The cubin
    package can: flashinfer-cubin 0.6.12 holds 1,696 batched-GEMM cubins, every
    one ``Sm100f`` or ``Sm103a``; on sm120 the runner finds no kernel.
Known limits
    Only the zip's directory and the ``*MetaInfo.h`` members are read (never
    the 360 MB of cubins). When the release pins no cubin package, the kernels
    come from a download: the JIT spec's note names the artifact directory the
    code asks for and the fact decides nothing (errs toward ``unknown``). An
    artifact directory that holds no cubin with an arch tag (DeepGEMM's
    ``kernel.fp8_m_grouped_gemm.<hash>.cubin``) gives no fact. The tags say
    which kernels exist, not which of them a given call selects: an arch the
    package has some kernel for is not proof that this call's kernel exists.
Example
    ``get_artifact(f"{ArtifactPath.TRTLLM_GEN_BMM}/checksums.txt", ...)`` in
    ``gen_trtllm_gen_fused_moe_sm100_module``, with flashinfer-cubin 0.6.12
    pinned -> ``capability major == 10 or capability == 10.3`` at
    ``flashinfer_cubin/cubins/c21ddd.../batched_gemm-91e0ba0-da44fdf/include/
    flashinferMetaInfo.h:42``.
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from guardscan.acquire import AcquireError, SourceTree, kernel_requirement
from guardscan.index.facts import FunctionFact
from guardscan.kernels.artifacts import arch_name_predicate
from guardscan.kernels.jit_spec import ARTIFACT_LOADER
from guardscan.kernels.model import KernelFact
from guardscan.kernels.symbols import ModuleSymbols, Resolver
from guardscan.messages import diagnostic
from guardscan.predicate import Predicate, disj
from guardscan.results import Diagnostic
from guardscan.syntax import literal, parse_expr

__all__ = ["CUBIN_DIST", "CubinDir", "CubinPackage", "CubinSource", "cubin_source",
           "read_cubin_wheel", "recognise_cubin_package"]

#: the distribution that carries FlashInfer's precompiled cubins
CUBIN_DIST = "flashinfer-cubin"
#: where its cubins lie inside the wheel (the artifact paths are relative to it)
CUBIN_ROOT = "flashinfer_cubin/cubins/"
#: ``flashinferMetaInfo.h`` (batched GEMM, GEMM) and ``flashInferMetaInfo.h`` (FMHA)
_META = "flashinfermetainfo.h"
#: a kernel table claiming more than this is not read (0.6.12's largest: 7 MB)
MAX_META_BYTES = 64 << 20
SCHEMA = 1

#: ``Sm100a`` / ``fmhaSm100fKernel`` / ``SmVersion::Sm103a`` (camel case)
_CAMEL = re.compile(r"Sm(\d{2,3})([af]?)(?![a-z0-9])")
#: ``_sm100f.cubin`` / ``sm_100a/`` (lower case, not inside a word)
_LOWER = re.compile(r"(?<![A-Za-z0-9])sm_?(\d{2,3})([af]?)(?![a-z0-9])")
#: ``kSM_100f`` (the FMHA table's enum)
_ENUM = re.compile(r"\bkSM_(\d{2,3})([af]?)\b")
_DOTTED = re.compile(r"\b([A-Za-z_]\w*)\.([A-Za-z_]\w*)\b")


def _counts(tags: Counter[str]) -> str:
    return ", ".join(f"{t} ({n})" if t else f"no arch tag ({n})" for t, n in sorted(tags.items()))


def _tags(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[str]:
    return [f"Sm{m.group(1)}{m.group(2)}" for p in patterns for m in p.finditer(text)]


@dataclass(frozen=True, slots=True)
class CubinDir:
    """One directory of cubins (relative to ``CUBIN_ROOT``) and the arch tags
    of the cubins in it, with counts."""

    path: str
    tags: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class MetaTable:
    """One ``*MetaInfo.h`` kernel table: its member, the arch tags of its
    entries (counts), and the line of its first tag."""

    member: str
    tags: tuple[tuple[str, int], ...]
    line: int
    text: str


@dataclass(frozen=True, slots=True)
class CubinPackage:
    """What a flashinfer-cubin wheel holds, by directory."""

    dist: str
    version: str
    wheel: str
    sha256: str
    dirs: tuple[CubinDir, ...]
    tables: tuple[MetaTable, ...]
    #: (diagnostic code, member) for each member not read
    failures: tuple[tuple[str, str], ...] = ()

    def under(self, prefix: str) -> tuple[Counter[str], MetaTable | None]:
        """The arch tags of the cubins named under artifact directory ``prefix``
        (with counts), and the kernel table there, if any."""
        prefix = prefix.strip("/") + "/"
        tags: Counter[str] = Counter()
        for entry in self.dirs:
            if (entry.path + "/").startswith(prefix):
                for tag, n in entry.tags:
                    tags[tag] += n
        table = next((t for t in self.tables
                      if t.member.startswith(CUBIN_ROOT + prefix)), None)
        return tags, table

    def to_json(self) -> dict[str, object]:
        return {"schema": SCHEMA, "dist": self.dist, "version": self.version,
                "wheel": self.wheel, "sha256": self.sha256,
                "dirs": [[d.path, [list(t) for t in d.tags]] for d in self.dirs],
                "tables": [[t.member, [list(x) for x in t.tags], t.line, t.text]
                           for t in self.tables],
                "failures": [list(f) for f in self.failures]}

    @classmethod
    def from_json(cls, data: object) -> CubinPackage | None:
        try:
            assert isinstance(data, dict) and data.get("schema") == SCHEMA
            return cls(str(data["dist"]), str(data["version"]), str(data["wheel"]),
                       str(data["sha256"]),
                       tuple(CubinDir(str(p), tuple((str(a), int(b)) for a, b in t))
                             for p, t in data["dirs"]),
                       tuple(MetaTable(str(m), tuple((str(a), int(b)) for a, b in t), int(ln),
                                       str(tx)) for m, t, ln, tx in data["tables"]),
                       tuple((str(a), str(b)) for a, b in data["failures"]))
        except Exception:  # noqa: BLE001 - a corrupt cache entry is a miss
            return None


@dataclass(frozen=True, slots=True)
class CubinSource:
    """What the kernel library is handed: the pinned cubin package, or why
    there is none (``reason``), and the diagnostics of reading it."""

    package: CubinPackage | None
    reason: str = ""
    diagnostics: tuple[Diagnostic, ...] = field(default=())

    @property
    def key(self) -> str:
        """What a cache of answers must be keyed on."""
        return self.package.sha256 if self.package is not None else f"none: {self.reason}"


def _safe(name: str) -> bool:
    """``binaries.wheel_members.safe_member_name``, without its path parsing for
    the names that cannot climb out (12,000 of them in a cubin wheel)."""
    if ".." not in name and "\\" not in name and "\0" not in name and ":" not in name[:2] \
            and not name.startswith("/") and name:
        return True
    from guardscan.binaries.wheel_members import safe_member_name

    return safe_member_name(name)


def read_cubin_wheel(wheel: Path, sha256: str = "") -> CubinPackage | Diagnostic:
    """The cubin package of ``wheel``, from its zip directory and kernel
    tables only; one ``Diagnostic`` when the file is not a readable zip."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            return _read_archive(archive, wheel.name, sha256)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError) as exc:
        return diagnostic(wheel.name, 0, "cubin-package-failed", wheel=wheel.name,
                          reason=f"{type(exc).__name__}: {exc}"[:200])


def _read_archive(archive: zipfile.ZipFile, wheel: str, sha256: str) -> CubinPackage:
    by_dir: dict[str, Counter[str]] = {}
    tables: list[MetaTable] = []
    failures: list[tuple[str, str]] = []
    version = ""
    for info in archive.infolist():
        name = info.filename
        if not _safe(name):
            failures.append(("unsafe-member", name[:200]))
            continue
        if name.endswith(".dist-info/METADATA") and not version:
            version = _metadata_version(archive, info)
        if not name.startswith(CUBIN_ROOT) or name.endswith("/"):
            continue
        rel = name[len(CUBIN_ROOT):]
        directory, _, base = rel.rpartition("/")
        if base.lower() == _META:
            table = _read_table(archive, info)
            if isinstance(table, str):
                failures.append((table, name))
            else:
                tables.append(table)
        elif base.endswith(".cubin"):
            found = _tags(rel, (_CAMEL, _LOWER))
            counter = by_dir.setdefault(directory, Counter())
            counter[found[-1] if found else ""] += 1
    dirs = tuple(CubinDir(d, tuple(sorted(c.items()))) for d, c in sorted(by_dir.items()))
    return CubinPackage(CUBIN_DIST, version, wheel, sha256, dirs, tuple(tables),
                        tuple(failures))


def _metadata_version(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> str:
    if info.file_size > 1 << 20:
        return ""
    with archive.open(info) as handle:
        for line in handle.read(1 << 20).decode("utf-8", "replace").splitlines():
            if line.startswith("Version:"):
                return line.partition(":")[2].strip()
    return ""


def _read_table(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> MetaTable | str:
    """A kernel table, or the code of why it was not read."""
    if info.file_size > MAX_META_BYTES:
        return "size-claim"
    try:
        with archive.open(info) as handle:
            data = handle.read(MAX_META_BYTES + 1)
    except (OSError, zipfile.BadZipFile, ValueError, EOFError, RuntimeError):
        return "truncated"
    if len(data) > MAX_META_BYTES:
        return "size-claim"
    text = data.decode("utf-8", "replace")
    counts: Counter[str] = Counter()
    first = -1
    for pattern in (_CAMEL, _ENUM):
        for found in pattern.finditer(text):
            start = text.rfind("\n", 0, found.start()) + 1
            if text[start:found.start()].lstrip().startswith(("#", "//", "*", "/*")):
                continue  # guards and comments name archs without being entries
            counts[f"Sm{found.group(1)}{found.group(2)}"] += 1
            if first < 0 or start < first:
                first = start
    if first < 0:
        return MetaTable(info.filename, (), 0, "")
    end = text.find("\n", first)
    first_text = text[first:end if end >= 0 else len(text)].strip()
    line = text.count("\n", 0, first) + 1
    return MetaTable(info.filename, tuple(sorted(counts.items())), line, first_text[:160])


# -- acquiring the pinned package -------------------------------------------------------------

def cubin_source(tree: SourceTree, kernel_tree: SourceTree | None, cache_dir: Path | None,
                 *, offline: bool = False) -> CubinSource:
    """The cubin package ``tree`` (else its kernel library) pins, read from the
    cache or from its wheel (downloaded like any pin); never raises."""
    spec = kernel_requirement(tree, CUBIN_DIST)
    if spec is None and kernel_tree is not None:
        spec = kernel_requirement(kernel_tree, CUBIN_DIST)
    if spec is None:
        return CubinSource(None, f"{tree.package} {tree.version or ''} pins no "
                           f"{CUBIN_DIST}".replace("  ", " "))
    from guardscan.binaries.cache import wheel_sha256
    from guardscan.binaries.packages import download_compiled

    try:
        wheel = download_compiled(spec, cache_dir, offline=offline)
    except AcquireError as exc:
        reason = f"{spec} not read: {exc.reason}"
        return CubinSource(None, reason, (diagnostic(spec, 0, "cubin-package-failed",
                                                      wheel=spec, reason=exc.reason[:200]),))
    try:
        sha = wheel_sha256(wheel, cache_dir)
    except OSError as exc:
        return CubinSource(None, f"{spec} not read", (diagnostic(
            wheel.name, 0, "cubin-package-failed", wheel=wheel.name, reason=str(exc)[:200]),))
    package = _cached(cache_dir, sha) if cache_dir is not None else None
    if package is None:
        read = read_cubin_wheel(wheel, sha)
        if isinstance(read, Diagnostic):
            return CubinSource(None, f"{spec} not read", (read,))
        package = read
        if cache_dir is not None:
            _store(cache_dir, package)
    return CubinSource(package, "", _failure_diagnostics(package))


def _failure_diagnostics(package: CubinPackage) -> tuple[Diagnostic, ...]:
    return tuple(diagnostic(package.wheel, 0, "cubin-package-failed", wheel=package.wheel,
                            reason=f"{code}: {member}") for code, member in package.failures)


def _cache_path(cache_dir: Path, sha: str) -> Path:
    return Path(cache_dir) / "cubins" / f"{sha}.json"


def _cached(cache_dir: Path, sha: str) -> CubinPackage | None:
    try:
        data = json.loads(_cache_path(cache_dir, sha).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return CubinPackage.from_json(data)


def _store(cache_dir: Path, package: CubinPackage) -> None:
    path = _cache_path(cache_dir, package.sha256)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(f".{os.getpid()}.tmp")
        temp.write_text(json.dumps(package.to_json()), encoding="utf-8")
        os.replace(temp, path)
    except OSError:
        pass  # an unwritable cache costs a re-read next time


# -- the recogniser ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class _ArtifactRef:
    name: str  # ArtifactPath.TRTLLM_GEN_BMM
    value: str  # the directory
    where: str  # flashinfer/artifacts.py:139
    line: int  # the line of the function that names it


def _artifact_refs(resolver: Resolver, table: ModuleSymbols,
                   fn: FunctionFact) -> list[_ArtifactRef]:
    texts = [(t, c.line) for c in table.calls.get(fn.qualname, [])
             for t in (*c.args, *(v for _, v in c.kwargs))]
    texts.extend((a.value, a.line) for a in table.scope_assigns.get(fn.qualname, []))
    refs: dict[str, _ArtifactRef] = {}
    for text, line in sorted(texts, key=lambda item: item[1]):
        for owner, attr in _DOTTED.findall(text):
            key = f"{owner}.{attr}"
            if key in refs:
                continue
            target = resolver.resolve_call(table.module, fn.qualname, owner)
            if target.kind != "class":
                continue
            module, _, qualname = target.name.rpartition(".")
            symbols = resolver.symbols(module)
            assigns = symbols.assigns.get(qualname, {}).get(attr, []) if symbols else []
            if symbols is None or len(assigns) != 1:
                continue
            node = parse_expr(assigns[0].value)
            value = literal(node) if node is not None else None
            if isinstance(value, str) and value.strip("/") and "/" in value:
                refs[key] = _ArtifactRef(key, value, f"{symbols.rel}:{assigns[0].line}", line)
    return list(refs.values())


def recognise_cubin_package(resolver: Resolver, table: ModuleSymbols, fn: FunctionFact,
                            source: CubinSource | None) -> tuple[list[KernelFact], list[str]]:
    """The cubin-package facts of one function, and, where no package decides,
    what the evidence should say instead (notes for its JIT-spec facts)."""
    if source is None:
        return [], []
    loads = [c for c in table.calls.get(fn.qualname, [])
             if c.func.rsplit(".", 1)[-1] == ARTIFACT_LOADER]
    if not loads:
        return [], []
    refs = _artifact_refs(resolver, table, fn)
    function_id = f"{table.module}.{fn.qualname}"
    package = source.package
    facts: list[KernelFact] = []
    notes: list[str] = []
    loader = f"{table.rel}:{loads[0].line}"
    for ref in refs:
        shown = f"{ref.name} = {ref.value!r} ({ref.where})"
        if package is None:
            notes.append(f"{shown} is downloaded at run time ({source.reason}): its archs "
                         "are not in any file read")
            continue
        named, meta = package.under(ref.value)
        listed = Counter(dict(meta.tags)) if meta is not None else Counter()
        tags = set(named) | set(listed)
        tags.discard("")
        if not tags:
            notes.append(f"{shown}: {package.dist} {package.version} holds no cubin with an "
                         "arch tag there")
            continue
        preds = [p for p in (arch_name_predicate(t) for t in sorted(tags)) if p is not None]
        predicate: Predicate = disj(*preds)
        said = [f"{sum(named.values())} cubins named " + _counts(named)] if named else []
        if meta is not None and listed:
            said.append(f"its kernel table lists {_counts(listed)}")
        where = (meta.member, meta.line, meta.text) if meta is not None and meta.line else (
            f"{CUBIN_ROOT}{ref.value.strip('/')}/", 1, said[0])
        facts.append(KernelFact(
            function=function_id, kind="artifacts", rel=where[0], line=where[1],
            text=where[2], predicate=predicate,
            note=f"{package.dist} {package.version} holds, under {shown}, "
                 f"{'; '.join(said)}: kernels for {', '.join(sorted(tags))} only; "
                 f"loaded by {ARTIFACT_LOADER} at {loader}"))
    return facts, notes
