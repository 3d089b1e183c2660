"""Which codecs can act on a trace's tensors on a device, and why not when they cannot.

A codec the device prices no kernel for cannot enter a policy, and a codec
that suits no tensor of the trace (binarize without a ReLU feeding a
max-pool, ZFP on integer tensors) leaves every tensor raw: its
``always:<codec>`` policy equals vDNN. Saying so beats a bar that silently
matches vDNN.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..codecs import get_codec
from ..codecs._registry import applies
from ..model.profiles import DeviceProfile, get_profile
from ..traces import Trace
from .policies import candidate_codecs, loses_values

__all__ = ["applies", "applicable_tensors", "applicable_codecs", "codec_notes"]


def applicable_tensors(trace: Trace, codec: str) -> int:
    """Return how many tensors of *trace* *codec* can encode.

    Examples
    --------
    >>> from pcr_explore.swap import builtin_trace
    >>> t = builtin_trace("vgg16", batch=8)
    >>> applicable_tensors(t, "zvc") == len(t), applicable_tensors(t, "binarize") > 0
    (True, True)
    """
    return sum(applies(codec, r) for r in trace.tensors)


def applicable_codecs(trace: Trace, profile: DeviceProfile | str) -> list[str]:
    """List the profile's lossless codecs that can encode at least one tensor of *trace*.

    The codecs worth ticking by default: lossy ones change what training
    reads, and a codec that suits no tensor only adds a line that no bar can
    follow.

    Examples
    --------
    >>> from pcr_explore.swap import builtin_trace
    >>> "binarize" in applicable_codecs(builtin_trace("vgg16", batch=8), "v100-pcie3")
    True
    """
    return [c for c in candidate_codecs(profile) if applicable_tensors(trace, c)]


def codec_notes(
    trace: Trace, profile: DeviceProfile | str, codecs: Iterable[str]
) -> dict[str, str]:
    """Say, for each of *codecs* that cannot act fully on *trace* and *profile*, why.

    Parameters
    ----------
    trace : Trace
    profile : DeviceProfile or str
    codecs : iterable of str
        Codec names, e.g. the ones ticked in a widget.

    Returns
    -------
    dict of str to str
        One sentence per codec that the profile does not price, that suits
        no tensor or only some, or that loses values; codecs that act on
        every tensor without loss are absent.

    Examples
    --------
    >>> from pcr_explore.swap import builtin_trace
    >>> notes = codec_notes(builtin_trace("vgg16", batch=8), "v100-pcie3", ["zvc", "lz4"])
    >>> list(notes)
    ['lz4']
    >>> notes["lz4"]  # doctest: +NORMALIZE_WHITESPACE
    'v100-pcie3 prices no GPU kernel for lz4 (a CPU codec): its ratio line is drawn,
     but no policy can use it'
    """
    prof = get_profile(profile)
    notes: dict[str, str] = {}
    n = len(trace)
    for c in codecs:
        name = get_codec(c).name
        if name not in prof.codecs:
            notes[name] = (
                f"{prof.name} prices no GPU kernel for {name} (a CPU codec): its ratio line "
                "is drawn, but no policy can use it"
            )
            continue
        k = applicable_tensors(trace, name)
        rule = (
            "a ReLU output that feeds a max-pool"
            if name == "binarize"
            else "a floating-point tensor"
        )
        if k == 0:
            notes[name] = (
                f"{name} needs {rule}; none of the {n} tensors of {trace.name} is one, "
                f"so always:{name} sends every tensor raw, as vDNN does"
            )
        elif k < n:
            notes[name] = f"{name} needs {rule}: {k} of the {n} tensors qualify"
        if loses_values(name):
            lossy = f"{name} is lossy: it changes the values training reads"
            notes[name] = f"{notes[name]}; {lossy}" if name in notes else lossy
    return notes
