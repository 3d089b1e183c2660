"""Where users import an object from, written into its ``__module__``.

The package's facades load their names lazily, so an object defined in
``pcr_explore.read.reader`` would otherwise report that private path in its
repr, in tracebacks and in pickles. ``@public("pcr_explore")`` names the
stable import instead (docs/API.md lists them); pickles stay loadable because
the facade resolves the name on first access.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

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
