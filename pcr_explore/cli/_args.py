"""Argument types shared by the sub-commands."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """Parse a whole number of at least 1, or tell argparse what was wrong."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return v


def byte_size(text: str) -> int:
    """Parse a size such as ``2GB`` or ``512MiB`` into bytes, or tell argparse what was wrong."""
    from ..storage._units import parse_bytes

    try:
        return int(parse_bytes(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def bandwidth(text: str) -> float:
    """Parse a bandwidth such as ``20MB/s`` (bytes per second), or tell argparse what was wrong."""
    from ..storage._units import parse_bytes

    try:
        return parse_bytes(text, rate=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def int_list(text: str, *, what: str = "levels", example: str = "1,2,5,10") -> list[int]:
    """Parse ``"1,2,5,10"`` into whole numbers, or tell argparse what was wrong."""
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values:
        raise argparse.ArgumentTypeError(f"expected {what} such as {example}, got {text!r}")
    return values
