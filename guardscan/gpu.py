"""gpu (the local machine): the architectures of this machine's NVIDIA GPUs, for
``--arch auto``.

Asked first of NVML, the driver's own library (``libnvidia-ml.so.1``, loaded with
ctypes: no new dependency, no CUDA toolkit needed), then of ``nvidia-smi``
(``guardscan.arch.local_archs``). Neither present, no driver, no GPU, or only
capabilities guardscan does not know: no answer, and a few words on why.
"""

from __future__ import annotations

import ctypes
from typing import Any

from guardscan.arch import Arch, known_archs, local_answer, local_archs

__all__ = ["NVML_LIBRARY", "detect_archs", "nvml_archs"]

#: The NVML shared library (a module attribute so tests can point it elsewhere).
NVML_LIBRARY = "libnvidia-ml.so.1"

_NVML_SUCCESS = 0


def _load_nvml() -> Any:
    """NVML as a ctypes library; OSError when it is not installed."""
    return ctypes.CDLL(NVML_LIBRARY)


def nvml_archs() -> tuple[list[Arch], str]:
    """The known architectures NVML reports, and how they were found (or why
    not). Calls nvmlInit_v2, nvmlDeviceGetCount_v2,
    nvmlDeviceGetHandleByIndex_v2 and nvmlDeviceGetCudaComputeCapability, then
    nvmlShutdown; any failure is no answer, never an exception."""
    try:
        nvml = _load_nvml()
    except OSError:
        return [], f"no NVML ({NVML_LIBRARY})"
    try:
        if nvml.nvmlInit_v2() != _NVML_SUCCESS:
            return [], "NVML found no driver"
    except (AttributeError, OSError):
        return [], f"{NVML_LIBRARY} is not a usable NVML"
    try:
        return _read_devices(nvml)
    except (AttributeError, OSError):
        return [], f"{NVML_LIBRARY} is not a usable NVML"
    finally:
        try:
            nvml.nvmlShutdown()
        except (AttributeError, OSError):
            pass


def _read_devices(nvml: Any) -> tuple[list[Arch], str]:
    count = ctypes.c_uint(0)
    if nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)) != _NVML_SUCCESS or count.value == 0:
        return [], "NVML found no GPU"
    known = {(info.arch.major, info.arch.minor): info.arch for info in known_archs()}
    found: set[Arch] = set()
    unknown: list[str] = []
    for index in range(count.value):
        handle = ctypes.c_void_p()
        if nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index),
                                              ctypes.byref(handle)) != _NVML_SUCCESS:
            continue
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        if nvml.nvmlDeviceGetCudaComputeCapability(handle, ctypes.byref(major),
                                                   ctypes.byref(minor)) != _NVML_SUCCESS:
            continue
        arch = known.get((major.value, minor.value))
        if arch is None:
            unknown.append(f"{major.value}.{minor.value}")
        else:
            found.add(arch)
    return local_answer(found, unknown, "NVML", "NVML could not read a GPU's compute capability")


def detect_archs() -> tuple[list[Arch], str]:
    """The local GPUs' architectures from NVML, else from nvidia-smi, and how
    they were found; an empty list, with both reasons, when neither answers."""
    archs, how = nvml_archs()
    if archs:
        return archs, how
    smi_archs, smi_how = local_archs()
    if smi_archs:
        return smi_archs, smi_how
    return [], f"{how}; {smi_how}"
