"""kernels (form 6): re-exports through package ``__init__`` modules.

What it recognises
    Module-level ``from .fused_moe import cutlass_fused_moe`` (also ``as``
    aliases, ``from . import x``, ``import a.b as c``, star imports, and imports
    under ``try`` / ``with contextlib.suppress(ImportError)``) in every
    ``__init__`` of the package, each followed by qualified name to the function
    or class that defines it, however many re-exports away.
Why it matters
    SGLang writes ``from flashinfer import fp4_quantize`` or ``from
    flashinfer.fused_moe import cutlass_fused_moe``; the facts sit on
    ``flashinfer.fp4_quantization.fp4_quantize`` and
    ``flashinfer.fused_moe.core.cutlass_fused_moe``.
Known limits
    Lazy exports through a module ``__getattr__`` (0.7.2's ``prims_ts_*``) are
    not followed: those names stay unresolved rather than guessed.
Example
    ``flashinfer/__init__.py``: ``from .fused_moe import cutlass_fused_moe`` and
    ``flashinfer/fused_moe/__init__.py``: ``from .core import cutlass_fused_moe``
    -> ``exports["flashinfer.cutlass_fused_moe"] ==
    "flashinfer.fused_moe.core.cutlass_fused_moe"``.
"""

from __future__ import annotations

from guardscan.kernels.symbols import Resolver

__all__ = ["collect_exports"]


def collect_exports(resolver: Resolver, init_modules: list[str]) -> dict[str, str]:
    """Public name -> defining function or class, for the given package modules."""
    exports: dict[str, str] = {}
    for module in init_modules:
        table = resolver.symbols(module)
        if table is None:
            continue
        names = list(table.imports.get("", {}))
        for star in table.star_imports:
            star_table = resolver.symbols(star)
            if star_table is not None:
                names.extend(n for n in star_table.defs.get("", {}) if not n.startswith("_"))
        for name in dict.fromkeys(names):
            public = f"{module}.{name}"
            target = resolver.resolve_dotted(public)
            if target.kind in ("function", "class") and target.name != public:
                exports[public] = target.name
    return exports
