"""guardscan: which SGLang backend choices run on which NVIDIA GPU architecture,
answered from source text alone (nothing scanned is ever imported or run)."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
