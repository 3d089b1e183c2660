"""Where users import names from, how they load, and what a name needs installed.

The package's facades load their names lazily (PEP 562, through
lazy_loader), so ``import pcr_explore`` loads this module and nothing else
of the package. An object defined in ``pcr_explore.read.reader`` would
otherwise report that private path in its repr, in tracebacks and in
pickles: ``@public("pcr_explore")`` names the stable import instead
(docs/API.md lists them); pickles stay loadable because the facade resolves
the name on first access.

``pip install pcr-explore`` brings what encoding, reading and tuning need.
The rest comes with an extra (pyproject.toml's ``optional-dependencies``;
``tests/test_extras.py`` checks that :data:`EXTRAS` agrees with it). An
import of a missing optional dependency by the package's own code, at the
top of a module or inside a function, raises
:class:`~pcr_explore.errors.MissingExtraError` naming the extra: the finder
this module puts last on ``sys.meta_path`` asks once every other finder has
failed, and stays out of imports that other code makes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .errors import MissingExtraError

T = TypeVar("T", bound=Callable[..., Any])


def public(where: str) -> Callable[[T], T]:
    """Decorate a public class or function with the module users import it from."""

    def mark(obj: T) -> T:
        home = sys.modules[obj.__module__]
        # doctest looks for examples in the module __module__ names; listed in
        # the home module's __test__, they still run there, with its globals
        home.__dict__.setdefault("__test__", {})[obj.__name__] = obj
        obj.__module__ = where
        return obj

    return mark


def facade(
    package: str, file: str
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """A package's lazy ``__getattr__``, ``__dir__`` and ``__all__``, from its ``__init__.pyi``.

    lazy_loader imports each name on first use. Unlike its default, the name
    is not kept in the package's namespace afterwards: the package holds only
    its docstring, so doctest never meets an object there whose examples
    belong to (and need the globals of) the module that defines it.
    """
    import lazy_loader

    load, names, everything = lazy_loader.attach_stub(package, file)

    def __getattr__(name: str) -> Any:
        value = load(name)
        namespace = sys.modules[package].__dict__
        if namespace.get(name) is value and not isinstance(value, type(sys)):
            del namespace[name]  # submodules stay: the import system put them there
        return value

    return __getattr__, names, everything


# extra -> the top-level modules it installs that the package imports
EXTRAS: dict[str, frozenset[str]] = {
    "plots": frozenset({"bokeh"}),
    "audit": frozenset({"bokeh"}),
    "swap": frozenset({"lz4", "zstandard", "scipy"}),
    "zfp": frozenset({"zfpy"}),
    "torch": frozenset({"torch", "torchdata", "scipy", "pooch"}),
    "lab": frozenset(
        {"bokeh", "scipy", "lz4", "zstandard"}
        | {"jupyterlab", "ipywidgets", "anywidget", "traitlets", "IPython", "skimage"}
    ),
    "dask": frozenset({"dask", "distributed"}),
    "s3": frozenset({"s3fs"}),
    "pandas": frozenset({"pandas"}),
    "parquet": frozenset({"pyarrow"}),
    "hf": frozenset({"datasets"}),
}

# the part of the package a user was calling -> the extra made for that use;
# the longest prefix of the importing module's name decides
_USES: dict[str, str] = {
    "widgets": "lab",
    "encode.sample": "lab",
    "plots": "plots",
    "auditing": "audit",
    "budgeting": "torch",
    "train": "torch",
    "swap": "swap",
}


def _use(importer: str) -> str | None:
    """The longest key of ``_USES`` that *importer* (a module name) lies under."""
    parts = importer.split(".")[1:]
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in _USES:
            return ".".join(parts[:n])
    return None


def extra_for(module: str, importer: str = "") -> str | None:
    """The extra to install for top-level *module*, missing when *importer* imported it.

    The extra made for the importer's part of the package wins where it holds
    *module*; otherwise the smallest extra that holds it. ``None`` for a
    module no extra installs.
    """
    use = _use(importer)
    if use is not None and module in EXTRAS[_USES[use]]:
        return _USES[use]
    holders = [name for name, modules in EXTRAS.items() if module in modules]
    return min(holders, key=lambda name: len(EXTRAS[name])) if holders else None


def _importer(frame: FrameType | None) -> str:
    """The module whose import statement is running, above the import machinery's frames."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not isinstance(name, str) or not (
            name.startswith(("importlib", "_frozen_importlib")) or name in _OWN_FRAMES
        ):
            return name if isinstance(name, str) else ""
        frame = frame.f_back
    return ""


_OWN_FRAMES = {__name__}


def missing_extra(module: str) -> MissingExtraError | None:
    """The error for *module*, which no finder found, if this package's code asked for it.

    ``None`` where the import came from outside the package (another
    library probing an optional module of its own) or no extra installs it:
    Python then raises its own ``ModuleNotFoundError``.
    """
    importer = _importer(sys._getframe(1))
    if not importer.startswith("pcr_explore."):
        return None
    extra = extra_for(module.partition(".")[0], importer)
    if extra is None:
        return None
    use = _use(importer)
    what = f"pcr_explore.{use}" if use else ".".join(importer.split(".")[:2])
    from .errors import MissingExtraError  # only on a miss: the bare import stays light

    return MissingExtraError(
        f"{what} needs {module.partition('.')[0]}, which is not installed: "
        f"pip install 'pcr-explore[{extra}]'",
        name=module,
    )


class _MissingExtraFinder:
    """Last on ``sys.meta_path``: a module no finder found, asked for by this package's code.

    It finds nothing; for an optional dependency it raises the error naming
    the extra.
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        error = missing_extra(name)
        if error is not None:
            raise error


if not any(type(f).__name__ == _MissingExtraFinder.__name__ for f in sys.meta_path):
    sys.meta_path.append(_MissingExtraFinder())
