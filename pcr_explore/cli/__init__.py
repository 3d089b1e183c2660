"""The ``pcr-explore`` command.

Each sub-command is a thin wrapper over a library function; errors print one
line naming the file and the problem (``--debug`` shows the traceback).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

from ..errors import PCRError

__all__ = ["main", "build_parser"]


class _Parser(argparse.ArgumentParser):
    """argparse, with a mistake in the command line told in one line (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = _Parser(
        prog="pcr-explore",
        description="Progressive Compressed Records and compressed tensor swapping, measured.",
    )
    parser.add_argument("--version", action=_Version, help="show program's version number and exit")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    from . import _audit, _budget, _cache, _dataset, _demo, _export
    from ._swap import add_swap_sim_parser, add_swap_train_parser
    from ._train import add_train_parsers

    _dataset.register(sub)
    _audit.register(sub)
    _budget.register(sub)
    _cache.register(sub)
    _export.register(sub)
    _demo.register(sub)
    add_swap_sim_parser(sub)
    add_swap_train_parser(sub)
    add_train_parsers(sub)
    return parser


class _Version(argparse.Action):
    """``--version``, reading the installed version only when asked.

    The version comes from the package metadata: importlib.metadata loads
    about 50 modules (email, zipfile, csv ...) that no other call needs.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from .._version import __version__

        print(f"{parser.prog} {__version__}")
        parser.exit()


def _message(exc: BaseException) -> str:
    """One line for the user: the file, then what is wrong (no errno numbers)."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror}"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text


def _show_warning(message: Warning | str, category: type[Warning], *rest: object) -> None:
    """A warning as one line on stderr, like an error (its source line means nothing here)."""
    print(f"pcr-explore: warning: {message}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            if not args.debug:
                warnings.showwarning = _show_warning  # type: ignore[assignment]
            return int(args.func(args) or 0)
    except BrokenPipeError:
        # the reader went away (`pcr-explore inspect ... | head`): stop quietly, as
        # Unix tools do on SIGPIPE, and keep Python from failing again at exit
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + 13
    except KeyboardInterrupt:
        print("pcr-explore: interrupted", file=sys.stderr)
        return 130
    except (PCRError, OSError, ValueError, ImportError) as exc:
        if args.debug:
            traceback.print_exc()
        msg = _message(exc)
        print(f"pcr-explore: error: {msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
