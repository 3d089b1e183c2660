"""Dataset audit: contents, bytes and quality per scan level, the level to use, problems.

What a folder of images (or a PCR dataset) holds, what each scan level costs
and is worth, which level to train on, and what is broken.

:func:`audit` reads every file once (in worker processes): its content hash,
format, colour mode, size, how its JPEG is coded, and its bytes at each scan
level after the progressive transcode, computed from the scan offsets, without
decoding. Only a random sample is decoded at every level to measure quality
(:class:`~pcr_explore.quality.Sampler`), from which
:func:`~pcr_explore.tuner.recommend` picks the level. Broken files never stop
the audit: each one becomes an entry in ``problems``. The
:class:`AuditReport` saves as JSON, prints as text, shows in a notebook and
writes a standalone HTML page.
"""

from __future__ import annotations

from ._audit import audit
from ._inspect import TINY_SIDE
from ._report import AuditReport

__all__ = ["TINY_SIDE", "AuditReport", "audit"]
