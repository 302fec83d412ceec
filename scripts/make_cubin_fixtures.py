"""Write the small crafted cubin-package wheels under ``fixtures/cubins/``
(``tests/test_cubins.py`` fails when they drift from what this writes).

    python scripts/make_cubin_fixtures.py [--check]

- ``flashinfer_cubin-0.0.1-py3-none-any.whl``: a batched-GEMM directory with
  ``Sm100f`` / ``Sm103a`` cubins and a kernel table, an FMHA directory with
  ``fmhaSm100aKernel`` cubins, a DeepGEMM directory with untagged cubins;
- ``unsafe_members.whl``: the same plus ``../escape.cubin`` and
  ``/absolute/x.cubin`` (never used as paths);
- ``size_claim.whl``: a kernel table whose directory entry claims 64 GiB;
- ``truncated.whl``: the first wheel cut in half (no central directory).
"""

from __future__ import annotations

import io
import struct
import sys
import zipfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "cubins"
BMM = "flashinfer_cubin/cubins/aaaa/batched_gemm-1-2/"
FMHA = "flashinfer_cubin/cubins/bbbb/fmha/trtllm-gen/"
GEMM = "flashinfer_cubin/cubins/cccc/deep-gemm/"
TABLE = """// a kernel table
#ifndef EXCLUDE_SM_100
static const BatchedGemmConfig tllmGenBatchedGemmList[] = {
{nullptr, 0, "bmm_E2m1_sm100f", {}, gemm::SmVersion::Sm100f},
{nullptr, 0, "bmm_E2m1_sm103a", {}, gemm::SmVersion::Sm103a},
};
#endif
"""
_DATE = (2020, 1, 1, 0, 0, 0)


def _zip(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            info = zipfile.ZipInfo(name, _DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, data)
    return buffer.getvalue()


def _members() -> list[tuple[str, bytes]]:
    return [
        ("flashinfer_cubin-0.0.1.dist-info/METADATA",
         b"Metadata-Version: 2.1\nName: flashinfer-cubin\nVersion: 0.0.1\n"),
        (f"{BMM}bmm_E2m1_t128_sm100f.cubin", b"\x7fELF"),
        (f"{BMM}bmm_E2m1_t64_sm100f.cubin", b"\x7fELF"),
        (f"{BMM}bmm_E2m1_t128_sm103a.cubin", b"\x7fELF"),
        (f"{BMM}include/flashinferMetaInfo.h", TABLE.encode()),
        (f"{FMHA}fmhaSm100aKernel_QE4m3H128.cubin", b"\x7fELF"),
        (f"{GEMM}kernel.fp8_m_grouped_gemm.0074.cubin", b"\x7fELF"),
    ]


def _size_claim() -> bytes:
    data = bytearray(_zip(_members()))
    # the central directory entry of the kernel table: claim 64 GiB uncompressed (the
    # 32-bit field saturated, as a ZIP64 writer would leave it, is read as 4 GiB - 1)
    name = f"{BMM}include/flashinferMetaInfo.h".encode()
    at = data.find(b"PK\x01\x02" + bytes(0), data.find(b"PK\x01\x02"))
    while at >= 0:
        length = struct.unpack_from("<H", data, at + 28)[0]
        if bytes(data[at + 46:at + 46 + length]) == name:
            struct.pack_into("<I", data, at + 24, 0xFFFFFFFE)
            break
        at = data.find(b"PK\x01\x02", at + 4)
    return bytes(data)


def outputs() -> dict[str, bytes]:
    good = _zip(_members())
    return {
        "flashinfer_cubin-0.0.1-py3-none-any.whl": good,
        "unsafe_members.whl": _zip([*_members(), ("../escape.cubin", b"x"),
                                    ("/absolute/x_sm120a.cubin", b"x")]),
        "size_claim.whl": _size_claim(),
        "truncated.whl": good[: len(good) // 2],
    }


def main() -> int:
    check = "--check" in sys.argv[1:]
    drift = []
    for name, data in outputs().items():
        path = OUT / name
        if check:
            if not path.is_file() or path.read_bytes() != data:
                drift.append(name)
            continue
        OUT.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    if drift:
        print("drifted: " + ", ".join(drift), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
