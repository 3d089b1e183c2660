"""Device profiles: a GPU and its host link as the simulator prices them.

A :class:`DeviceProfile` holds the link bandwidth, compute and memory speed
of a GPU and the kernel costs of the codecs it runs. Every default number is
listed in ``docs/SWAP.md`` with its source (PCIe specifications, NVIDIA
datasheets) or marked as an assumption.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from ..._public import public
from ...errors import SwapError
from ..codecs import get_codec
from ..codecs._base import Codec
from .costs import CodecCost, gpu_codec_costs

__all__ = ["DeviceProfile", "PROFILES", "get_profile", "profile_names"]


@public("pcr_explore.swap")
@dataclass(frozen=True)
class DeviceProfile:
    """A GPU and its host link, as the simulator prices them.

    Frozen so a profile can be shared safely; edit with :meth:`replace` or
    :meth:`with_codec`. Layer time is ``flops / (peak_flops *
    compute_efficiency) + mem_bytes / (hbm * memory_efficiency)``; a copy
    takes ``link_latency_s + bytes / (link_gbps * link_efficiency)``.

    Parameters
    ----------
    name : str
        Profile name.
    link_gbps : float
        Theoretical link bandwidth per direction, GB/s (1e9 bytes/s).
    link_efficiency : float
        Fraction of ``link_gbps`` a pinned-memory copy reaches.
    link_latency_s : float
        Fixed cost per copy (launch + DMA setup), seconds.
    peak_flops : float
        FP32 peak FLOP/s (no tensor cores).
    compute_efficiency : float
        Fraction of ``peak_flops`` that convolution/GEMM layers reach.
    hbm_gbps : float
        Device memory bandwidth, GB/s; prices memory-bound layers.
    memory_efficiency : float
        Fraction of ``hbm_gbps`` that memory-bound layers reach.
    codecs : mapping of str to CodecCost
        Kernel costs of the codecs this device can run.
    notes : str
        Where the numbers come from.

    Raises
    ------
    SwapError
        For a non-positive speed, an efficiency outside (0, 1], a negative
        latency, or a codec cost that is not a :class:`CodecCost`.

    Examples
    --------
    >>> p = get_profile("v100-pcie3")
    >>> round(float(p.transfer_time(2**30)) * 1e3, 2)  # ms to copy 1 GiB
    85.23
    >>> fast = p.replace(link_gbps=2 * p.link_gbps)
    >>> round(float(fast.transfer_time(2**30)) * 1e3, 2)
    42.62
    """

    name: str
    link_gbps: float
    peak_flops: float
    hbm_gbps: float
    link_efficiency: float = 0.8
    link_latency_s: float = 10e-6
    compute_efficiency: float = 0.6
    memory_efficiency: float = 0.7
    codecs: Mapping[str, CodecCost] = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        for attr in ("link_gbps", "peak_flops", "hbm_gbps"):
            v = getattr(self, attr)
            if not isinstance(v, int | float) or not v > 0:
                raise SwapError(f"profile {self.name!r}: {attr} must be > 0, got {v!r}")
        for attr in ("link_efficiency", "compute_efficiency", "memory_efficiency"):
            v = getattr(self, attr)
            if not isinstance(v, int | float) or not 0 < v <= 1:
                raise SwapError(f"profile {self.name!r}: {attr} must lie in (0, 1], got {v!r}")
        if not self.link_latency_s >= 0:
            raise SwapError(f"profile {self.name!r}: link_latency_s must be >= 0")
        for key, cost in self.codecs.items():
            if not isinstance(cost, CodecCost):
                raise SwapError(f"profile {self.name!r}: codec {key!r} needs a CodecCost")
        object.__setattr__(self, "codecs", MappingProxyType(dict(self.codecs)))

    @property
    def link_bytes_per_s(self) -> float:
        """Effective link bandwidth in bytes/s (infinite stays infinite)."""
        return self.link_gbps * 1e9 * self.link_efficiency

    def transfer_time(self, nbytes: np.ndarray | float) -> np.ndarray | float:
        """Return the seconds to copy ``nbytes`` one way.

        Parameters
        ----------
        nbytes : float or ndarray
            Bytes per copy.

        Returns
        -------
        float or ndarray
            ``link_latency_s + nbytes / link_bytes_per_s``; 0 bytes cost nothing.
        """
        nb = np.asarray(nbytes, dtype=float)
        return np.where(nb > 0, self.link_latency_s + nb / self.link_bytes_per_s, 0.0)

    def compute_time(
        self, flops: np.ndarray | float, mem_bytes: np.ndarray | float = 0.0
    ) -> np.ndarray:
        """Return the seconds of a layer of ``flops`` FLOPs moving ``mem_bytes`` bytes.

        Parameters
        ----------
        flops : float or ndarray
            Floating-point operations (a multiply-add counts 2).
        mem_bytes : float or ndarray
            Device-memory bytes read and written.

        Returns
        -------
        ndarray
            Seconds, compute and memory time added.
        """
        return np.asarray(flops, dtype=float) / (self.peak_flops * self.compute_efficiency) + (
            np.asarray(mem_bytes, dtype=float) / (self.hbm_gbps * 1e9 * self.memory_efficiency)
        )

    def replace(self, **changes: Any) -> DeviceProfile:
        """Return a copy with some fields changed.

        Parameters
        ----------
        **changes
            Field values, e.g. ``link_gbps=float("inf")``.

        Returns
        -------
        DeviceProfile
            The edited copy (validated again).
        """
        return replace(self, **changes)

    def with_codec(self, codec: str | Codec, cost: CodecCost | None) -> DeviceProfile:
        """Return a copy with a codec's cost set, or removed when ``cost`` is None.

        Parameters
        ----------
        codec : str or Codec
            Codec whose cost to set.
        cost : CodecCost or None
            Its kernel costs, e.g. ``calibrate(codec).cost``.

        Returns
        -------
        DeviceProfile
            The edited copy.
        """
        name = get_codec(codec).name
        codecs = dict(self.codecs)
        if cost is None:
            codecs.pop(name, None)
        else:
            codecs[name] = cost
        return replace(self, codecs=codecs)

    def _repr_html_(self) -> str:
        rows = "".join(
            f"<tr><td>{k}</td><td>{c.compress.alpha * 1e6:.1f}</td>"
            f"<td>{1 / (c.compress.beta * 1e9) if c.compress.beta else float('inf'):.1f}</td></tr>"
            for k, c in self.codecs.items()
        )
        return (
            f"<b>{self.name}</b>: link {self.link_gbps:g} GB/s x {self.link_efficiency:g}, "
            f"{self.peak_flops / 1e12:g} TFLOP/s x {self.compute_efficiency:g}, HBM "
            f"{self.hbm_gbps:g} GB/s<table><tr><th>codec</th><th>alpha us</th>"
            f"<th>G elem/s</th></tr>{rows}</table>"
        )


def _gpu_profile(name: str, link: float, tflops: float, hbm: float, notes: str) -> DeviceProfile:
    return DeviceProfile(
        name=name,
        link_gbps=link,
        peak_flops=tflops * 1e12,
        hbm_gbps=hbm,
        codecs=gpu_codec_costs(hbm),
        notes=notes,
    )


#: Built-in profiles; see docs/SWAP.md for the source of every number.
PROFILES: Mapping[str, DeviceProfile] = MappingProxyType(
    {
        "v100-pcie3": _gpu_profile(
            "v100-pcie3",
            15.75,
            15.7,
            900.0,
            "V100 SXM2: 15.7 TFLOP/s FP32, 900 GB/s HBM2; PCIe 3.0 x16 per direction",
        ),
        "a100-pcie4": _gpu_profile(
            "a100-pcie4",
            31.5,
            19.5,
            1555.0,
            "A100 40GB: 19.5 TFLOP/s FP32 (no TF32), 1555 GB/s HBM2; PCIe 4.0 x16",
        ),
        "h100-pcie5": _gpu_profile(
            "h100-pcie5",
            63.0,
            51.0,
            2000.0,
            "H100 PCIe: 51 TFLOP/s FP32, 2000 GB/s HBM2e; PCIe 5.0 x16",
        ),
    }
)


@public("pcr_explore.swap")
def profile_names() -> list[str]:
    """List the names of the built-in profiles.

    Returns
    -------
    list of str
        Keys of :data:`PROFILES`.

    Examples
    --------
    >>> profile_names()
    ['v100-pcie3', 'a100-pcie4', 'h100-pcie5']
    """
    return list(PROFILES)


@public("pcr_explore.swap")
def get_profile(name: str | DeviceProfile) -> DeviceProfile:
    """Look up a built-in profile by name; a profile is returned unchanged.

    Parameters
    ----------
    name : str or DeviceProfile
        A key of :data:`PROFILES` (case-insensitive) or a profile.

    Returns
    -------
    DeviceProfile
        The profile.

    Raises
    ------
    SwapError
        For an unknown name.
    """
    if isinstance(name, DeviceProfile):
        return name
    try:
        return PROFILES[str(name).lower()]
    except KeyError:
        raise SwapError(f"unknown profile {name!r}; built-in: {', '.join(PROFILES)}") from None
