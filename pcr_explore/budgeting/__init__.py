"""How many bytes a training run needs: one call, one report (``pcr.budget``).

The budget brings the package's measurements together per scan level:
bytes, quality, gradient similarity, a proxy training's accuracy and the
decode cost on this machine, each criterion's choice and the level that
satisfies them all, with the epoch time at a storage bandwidth.
"""

from .._public import facade

__getattr__, __dir__, __all__ = facade(__name__, __file__)
