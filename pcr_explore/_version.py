"""The installed package's version, from its metadata (pyproject.toml is the one source)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("pcr-explore")
except PackageNotFoundError:  # pragma: no cover - imported from a source tree, not installed
    __version__ = "0+unknown"
