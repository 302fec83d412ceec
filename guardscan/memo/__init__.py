"""memo (the driver's caching layer): every cache of a scan, behind one seam.

The stages (options, guards, link, kernels, verdicts) are written as plain
functions of their inputs and never import this package. The driver,
``guardscan.driver``, holds one :class:`ScanMemo` per scan and hands the
stages what records and replays: a linking-unit runner, a store of judged
choices, the kernel library's answers. Each answer is reused only while what
it read is unchanged, the way Salsa and rust-analyzer reuse queries:

- ``results``: whole scan results, with the early cutoff on changed files;
- ``records``: what linking read and found, unit by unit;
- ``link_units``: the runner that records units and replays them;
- ``session``: the seam itself (:class:`ScanMemo`);
- ``warm``: the kernel stage of a cold scan, in a background process on an idle core.

The facts cache (parsed files by content hash) lives with the index, and the
reads each stage makes are recorded by the index's views
(``guardscan.index.observe``).
"""

from __future__ import annotations

from guardscan.memo.session import ScanMemo, StoredJudging

__all__ = ["ScanMemo", "StoredJudging"]
