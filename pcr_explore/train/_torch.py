"""PyTorch, imported on first use, with an error that names the extra."""

from __future__ import annotations

from types import ModuleType

from ..errors import MissingExtraError

INSTALL = "pip install 'pcr-explore[torch]'"


def require_torch(what: str) -> ModuleType:
    """Return the ``torch`` module, or raise naming the extra that installs it."""
    try:
        import torch
    except ImportError as exc:
        raise MissingExtraError(f"{what} needs PyTorch: {INSTALL}") from exc
    return torch
