"""pcr_explore: see and measure how many bytes of your training data you need.

Progressive Compressed Records (PCRs) store each image as a progressive JPEG
and lay records out scan group by scan group, so a prefix read of a record
gives every image at a lower fidelity. This package encodes them, reads them
at any level, measures quality per level and picks the level for a target,
audits image folders, and (``pcr_explore.train``, with PyTorch) trains at
each level. Its ``swap`` subpackage measures and simulates compressed
activation swapping.

The names here are the user's verbs and their results; lower-level tools
(scan splitting, metric kernels, the record format) are imported from their
modules, e.g. ``from pcr_explore.jpeg import split_scans``.

References
----------
.. [1] M. Kuchnik, G. Amvrosiadis, V. Smith, "Progressive Compressed
   Records: Taking a Byte out of Deep Learning Data", PVLDB 14(11), 2021.
.. [2] P. Chen et al., "CSWAP: A Self-Tuning Compression Framework for
   Accelerating Tensor Swapping in GPUs", IEEE CLUSTER 2021, and its journal
   version in IEEE TPDS 33(12), 2022.
"""

from ._public import facade

# The names below are imported on first use (PEP 562): the list lives in
# __init__.pyi, which type checkers read as well.
__getattr__, __dir__, __all__ = facade(__name__, __file__)
