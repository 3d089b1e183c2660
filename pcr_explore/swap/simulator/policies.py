"""Swap policies: what decides, per tensor, whether and how to compress before the copy.

* ``vdnn``: every tensor raw (vDNN, Rhu et al., MICRO 2016).
* ``always:<codec>``: every tensor with that codec (binarize only where the
  tensor allows it, raw elsewhere).
* ``cswap``: per tensor, the least **predicted** stall among raw and ZVC,
  CSWAP's codec set; ``cswap+lossy`` adds ZFP, as the journal version
  (CSwap+) does (the papers are cited in :mod:`pcr_explore.swap`).
* ``cswap-all``: the same decision over every codec of the profile that keeps
  what training reads (ZVC, bitmap, CSR, delta8, RLE, binarize): a wider set
  than the papers had; ``cswap-all+lossy`` adds ZFP; ``cswap:zvc,csr``
  chooses among the codecs listed.
* ``oracle``, ``oracle+lossy``, ``oracle-all``, ``oracle:<codecs>``: the
  least **true** stall over the same choices, a lower bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..._public import public
from ...errors import SwapError
from ..codecs import get_codec
from ..codecs._lossy import ZFP
from ..model.profiles import DeviceProfile, get_profile

__all__ = [
    "PAPER_CODECS",
    "Policy",
    "parse_policy",
    "default_policies",
    "policies_for_codecs",
    "candidate_codecs",
    "loses_values",
]


#: The codecs CSWAP chooses among: ZVC; the lossy variant (CSwap+) adds ZFP.
PAPER_CODECS: tuple[str, ...] = ("zvc",)
PAPER_LOSSY_CODECS: tuple[str, ...] = ("zvc", "zfp")


@dataclass(frozen=True)
class Policy:
    """A parsed policy spec.

    Parameters
    ----------
    kind : str
        ``"vdnn"``, ``"always"``, ``"cswap"`` or ``"oracle"``.
    codec : str or None
        For ``always``: the codec name.
    lossy : bool
        ``cswap`` / ``oracle`` may pick lossy ZFP.
    codecs : tuple of str or None
        For ``cswap:<c1>,<c2>`` / ``oracle:...``: the only codecs considered
        (besides raw).
    wide : bool
        ``cswap-all`` / ``oracle-all``: every codec of the profile, not only
        CSWAP's ZVC (and ZFP).
    """

    kind: str
    codec: str | None = None
    lossy: bool = False
    codecs: tuple[str, ...] | None = None
    wide: bool = False

    @property
    def name(self) -> str:
        """Canonical spec string, which :func:`parse_policy` reads back."""
        if self.kind == "always":
            return f"always:{self.codec}"
        if self.codecs is not None:
            return f"{self.kind}:{','.join(self.codecs)}"
        return self.kind + ("-all" if self.wide else "") + ("+lossy" if self.lossy else "")

    def choices(self, profile: DeviceProfile | str) -> list[str]:
        """The codecs (besides raw) a ``cswap`` or ``oracle`` policy chooses among on *profile*.

        Parameters
        ----------
        profile : DeviceProfile or str

        Returns
        -------
        list of str
            Listed codecs as given; for ``-all`` every codec of the profile
            (lossy ones with ``+lossy``); otherwise CSWAP's set the profile
            prices: ZVC, and ZFP with ``+lossy``.

        Examples
        --------
        >>> [parse_policy(p).choices("v100-pcie3") for p in ("cswap", "cswap+lossy")]
        [['zvc'], ['zvc', 'zfp']]
        >>> len(parse_policy("cswap-all").choices("v100-pcie3"))
        6
        """
        if self.codecs is not None:
            return list(self.codecs)
        if self.wide:
            return candidate_codecs(profile, lossy=self.lossy)
        paper = PAPER_LOSSY_CODECS if self.lossy else PAPER_CODECS
        return [c for c in paper if c in get_profile(profile).codecs]


def loses_values(codec: str) -> bool:
    """Tell whether a codec changes values that training reads back.

    ZFP does; binarize keeps all that a max-pool's backward uses, and the
    sparse and byte codecs are lossless.

    Parameters
    ----------
    codec : str
        Codec spec.

    Returns
    -------
    bool
        True for ZFP at any rate.

    Examples
    --------
    >>> loses_values("zfp:8"), loses_values("binarize"), loses_values("zvc")
    (True, False, False)
    """
    return isinstance(get_codec(codec), ZFP)


def parse_policy(spec: str | Policy) -> Policy:
    """Parse a policy spec such as ``"always:zvc"``, ``"cswap+lossy"`` or ``"oracle:zvc,zfp"``.

    Parameters
    ----------
    spec : str or Policy
        ``vdnn``, ``always:<codec>``, ``cswap``, ``cswap+lossy``,
        ``cswap-all``, ``cswap-all+lossy``, ``cswap:<codec>[,<codec>...]``,
        and the same with ``oracle`` (case-insensitive); a Policy is
        returned unchanged.

    Returns
    -------
    Policy
        The parsed policy; its :attr:`~Policy.name` is the canonical spec.

    Raises
    ------
    SwapError
        For an unknown policy or codec.

    Examples
    --------
    >>> parse_policy("always:ZVC").name
    'always:zvc'
    >>> parse_policy("cswap:zvc,zfp")
    Policy(kind='cswap', codec=None, lossy=True, codecs=('zvc', 'zfp'), wide=False)
    >>> parse_policy("cswap-all+lossy").name
    'cswap-all+lossy'
    """
    if isinstance(spec, Policy):
        return spec
    if not isinstance(spec, str):
        raise SwapError(f"policy must be a string, got {type(spec).__name__}")
    s = spec.strip().lower()
    if s == "vdnn":
        return Policy("vdnn")
    if s.startswith("always:"):
        return Policy("always", get_codec(s.partition(":")[2]).name)
    base, colon, listed = s.partition(":")
    if base in ("cswap", "oracle") and colon:
        names = tuple(get_codec(c).name for c in listed.split(",") if c.strip())
        if not names:
            raise SwapError(f"policy {spec!r} lists no codecs")
        return Policy(base, None, any(loses_values(c) for c in names), names)
    base, plus, extra = s.partition("+")
    kind, dash, wide = base.partition("-")
    if (
        kind in ("cswap", "oracle")
        and (not dash or wide == "all")
        and (not plus or extra == "lossy")
    ):
        return Policy(kind, None, bool(plus), wide=bool(dash))
    raise SwapError(
        f"unknown policy {spec!r}; expected vdnn, always:<codec>, cswap, cswap+lossy, "
        "cswap-all, cswap-all+lossy, cswap:<codec>[,<codec>...], or oracle likewise"
    )


@public("pcr_explore.swap")
def default_policies(profile: DeviceProfile | str) -> list[str]:
    """List ``vdnn``, ``always:<c>`` per codec of the profile, ``cswap``, ``cswap-all``, oracles.

    ``cswap`` and ``oracle`` choose among CSWAP's codec (ZVC); ``cswap-all``
    and ``oracle-all`` among every lossless codec of the profile.

    Parameters
    ----------
    profile : DeviceProfile or str
        A profile or a built-in profile name.

    Returns
    -------
    list of str
        Policy specs, in that order.

    Raises
    ------
    SwapError
        For an unknown profile name.

    Examples
    --------
    >>> default_policies("v100-pcie3")[:3]
    ['vdnn', 'always:zvc', 'always:bitmap']
    """
    p = get_profile(profile)
    return [
        "vdnn",
        *(f"always:{c}" for c in p.codecs),
        "cswap",
        "cswap-all",
        "oracle",
        "oracle-all",
    ]


def candidate_codecs(profile: DeviceProfile | str, *, lossy: bool = False) -> list[str]:
    """List the profile's codecs that ``cswap-all`` and ``oracle-all`` choose among (besides raw).

    Parameters
    ----------
    profile : DeviceProfile or str
        A profile or a built-in profile name.
    lossy : bool
        Include codecs that change values training reads (ZFP), as
        ``cswap+lossy`` does.

    Returns
    -------
    list of str
        Codec names in the profile's order.

    Raises
    ------
    SwapError
        For an unknown profile name.

    Examples
    --------
    >>> candidate_codecs("v100-pcie3")
    ['zvc', 'bitmap', 'csr', 'delta8', 'rle', 'binarize']
    """
    return [c for c in get_profile(profile).codecs if lossy or not loses_values(c)]


def policies_for_codecs(profile: DeviceProfile | str, codecs: Iterable[str]) -> list[str]:
    """List the policies that compare a chosen set of codecs on a profile.

    ``vdnn``, then ``always:<c>``, ``cswap:<codecs>`` and ``oracle:<codecs>``
    over the given codecs that the profile prices (others have no kernel
    cost on that device and are left out).

    Parameters
    ----------
    profile : DeviceProfile or str
        A profile or a built-in profile name.
    codecs : iterable of str
        Codec names, e.g. the ones ticked in a widget.

    Returns
    -------
    list of str
        Policy specs; just ``["vdnn"]`` when no given codec is priced.

    Raises
    ------
    SwapError
        For an unknown profile name.

    Examples
    --------
    >>> policies_for_codecs("v100-pcie3", ["zvc", "zstd", "csr"])
    ['vdnn', 'always:zvc', 'always:csr', 'cswap:zvc,csr', 'oracle:zvc,csr']
    """
    prof = get_profile(profile)
    usable = [c for c in codecs if c in prof.codecs]
    if not usable:
        return ["vdnn"]
    listed = ",".join(usable)
    return ["vdnn", *(f"always:{c}" for c in usable), f"cswap:{listed}", f"oracle:{listed}"]
