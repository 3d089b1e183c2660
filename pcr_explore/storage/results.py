"""Results kept on disk: an expensive call's result, keyed by what it was computed from.

A quality curve, a decode timing or a training run costs seconds to minutes
and, for the same data and settings, gives the same answer. A
:class:`ResultsCache` keeps such results in a folder, so a notebook's re-run,
a kernel restart or Voilà finds them instead of measuring again. Nothing is
cached unless a caller asks: library functions stay pure, and the cache is a
wrapper around a call (``cache.call(quality_curve, source, sample=16)``).

The key of a call is a SHA-256 over

- the package's version and the function's identity: its module and
  qualified name, its code (bytecode, constants, nested functions' code and
  the names it refers to), its default values and the values it closes over;
  a bound method's instance and a :func:`functools.partial`'s arguments by
  their content identity, like arguments;
- every argument's content identity (:func:`content_identity`): a local file
  or folder by its files' relative names, sizes and modification times (no
  byte is read, so a large dataset costs one ``stat`` per file), a PCR
  dataset by its manifest (names, sizes and checksums of every record), arrays
  by their bytes, dataclasses by their fields, other objects by their pickle;
- with ``per_machine=True``, the host name, processor and core count (for
  timings, which belong to the machine that measured them).

An entry is one file, ``<folder>/<function>/<key>.pickle``: a magic line, the
SHA-256 of the payload, and the payload (the pickled result). It is written
with :func:`~pcr_explore.storage._atomic.atomic_write`, so a reader sees a
whole entry or none; an entry that fails its checksum or does not unpickle is
computed again and replaced, never returned. Entries are pickles: use only a
cache folder you trust, as for any pickle.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import pickle
import platform
import re
import types
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from .._public import public
from .._version import __version__
from ._atomic import atomic_write

T = TypeVar("T")

ENV_VAR = "PCR_RESULTS_CACHE"
_MAGIC = b"pcr-explore results 1\n"
_DIGEST = 32  # bytes of SHA-256
# What clear() may delete: entries and atomic_write's temporary files for them
_OWNED = re.compile(r"[0-9a-f]{64}\.pickle|\.[0-9a-f]{64}\.pickle\..+\.tmp")


def default_results_dir() -> Path:
    """The folder a :class:`ResultsCache` uses when none is given.

    ``$PCR_RESULTS_CACHE`` where set, else ``pcr-explore/results`` in the
    user's cache folder (``$XDG_CACHE_HOME``, default ``~/.cache``).
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "pcr-explore" / "results"


def _path_identity(path: Path, h: Any) -> None:
    """Feed a local file's or folder's names, sizes and modification times (not its bytes)."""
    if path.is_file():
        st = path.stat()
        h.update(f"file {st.st_size} {st.st_mtime_ns}\n".encode())
        return
    h.update(b"folder\n")
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except OSError:  # vanished while walking: its absence is the identity
                continue
            rel = os.path.relpath(full, path)
            h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())


# A folder source's settings that change the images it gives (FolderSource's)
_SOURCE_SETTINGS = ("scan_script", "quality", "backend", "num_scans")


def _feed(value: Any, h: Any, where: str) -> None:
    """Feed *value*'s content identity into the hash *h* (see :func:`content_identity`)."""
    if value is None or isinstance(value, (bool, int, float, complex, bytes)):
        h.update(f"{type(value).__name__}:{value!r}\n".encode())
    elif isinstance(value, str):
        h.update(f"str:{value!r}\n".encode())
        if value and os.path.exists(value):
            _path_identity(Path(value), h)
    elif isinstance(value, os.PathLike):
        path = Path(value)
        h.update(f"path:{path.name!r}\n".encode())
        if path.exists():
            _path_identity(path, h)
    elif isinstance(value, np.ndarray):
        h.update(f"array:{value.dtype.str}:{value.shape}\n".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, (list, tuple)):
        h.update(f"{type(value).__name__}[{len(value)}\n".encode())
        for k, item in enumerate(value):
            _feed(item, h, f"{where}[{k}]")
        h.update(b"]\n")
    elif isinstance(value, dict):
        h.update(f"dict[{len(value)}\n".encode())
        for k in sorted(value, key=repr):
            _feed(k, h, where)
            _feed(value[k], h, f"{where}[{k!r}]")
        h.update(b"]\n")
    elif isinstance(value, (set, frozenset)):
        _feed(sorted(value, key=repr), h, where)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(f"dataclass:{type(value).__module__}.{type(value).__qualname__}\n".encode())
        for f in dataclasses.fields(value):
            _feed(f.name, h, where)
            _feed(getattr(value, f.name), h, f"{where}.{f.name}")
    elif getattr(value, "manifest", None) is not None:  # a PCR dataset: its records' checksums
        h.update(f"dataset:{type(value).__qualname__}\n".encode())
        _feed(value.manifest, h, f"{where}.manifest")
    elif isinstance(getattr(value, "url", None), str):  # a folder or file source
        h.update(f"source:{type(value).__qualname__}\n".encode())
        _feed(value.url, h, f"{where}.url")
        for name in _SOURCE_SETTINGS:  # how its images are transcoded, where it says
            _feed(getattr(value, name, None), h, f"{where}.{name}")
    elif isinstance(value, types.FunctionType):
        _feed_function(value, h, where, frozenset())
    elif isinstance(value, functools.partial):
        h.update(b"partial\n")
        _feed((value.func, value.args, value.keywords), h, where)
    elif isinstance(value, (types.MethodType, types.BuiltinMethodType)) and not isinstance(
        value.__self__, (types.ModuleType, type(None))
    ):  # a bound method: what it is bound to is one of its inputs
        h.update(f"method:{value.__qualname__}\n".encode())
        if isinstance(value, types.MethodType):
            _feed(value.__func__, h, where)
        _feed(value.__self__, h, f"the instance of {where}")
    elif isinstance(value, types.ModuleType):
        h.update(f"module:{value.__name__}\n".encode())
    elif callable(value) and hasattr(value, "__qualname__"):  # classes, builtins: by name
        h.update(f"callable:{getattr(value, '__module__', '')}.{value.__qualname__}\n".encode())
    else:
        _feed_pickle(value, h, where)


def _feed_function(func: types.FunctionType, h: Any, where: str, outer: frozenset[int]) -> None:
    """Feed a function's name, code, default values and the values it closes over.

    *outer* holds the functions being fed around this one, so that a nested
    function that calls itself (its own closure cell) ends instead of recursing.
    """
    h.update(f"function:{func.__module__}.{func.__qualname__}\n".encode())
    _feed_code(func.__code__, h)
    _feed(func.__defaults__, h, f"the defaults of {where}")
    _feed(func.__kwdefaults__, h, f"the keyword defaults of {where}")
    outer = outer | {id(func)}
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
        try:
            value = cell.cell_contents
        except ValueError:  # a cell not yet assigned
            h.update(f"cell {name} empty\n".encode())
            continue
        h.update(f"cell {name}\n".encode())
        if id(value) in outer:
            h.update(b"recursive\n")
        elif isinstance(value, types.FunctionType):
            _feed_function(value, h, f"{name} in {where}", outer)
        else:
            _feed(value, h, f"{name} in {where}")


def _feed_code(code: types.CodeType, h: Any) -> None:
    """Feed a code object: its bytecode, constants (nested code too) and the names it uses.

    Line numbers are left out: a line added above a function does not change it.
    """
    names = (code.co_argcount, code.co_kwonlyargcount, code.co_varnames, code.co_names)
    h.update(f"code {len(code.co_code)} {names!r}\n".encode() + code.co_code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _feed_code(const, h)
        elif isinstance(const, frozenset):  # `x in {"a", "b"}`: its order varies per process
            h.update(f"frozenset {sorted(const, key=repr)!r}\n".encode())
        else:  # a literal, by value: a string constant is not a path to read
            h.update(f"{type(const).__name__} {const!r}\n".encode())


class _IdentityPickler(pickle.Pickler):
    """A pickle where each tensor stands as its dtype, shape and bytes' hash.

    PyTorch pickles a tensor's storage as a ``torch.save`` archive that holds a
    random serialization id, so the same weights would never give the same key.
    """

    def persistent_id(self, obj: Any) -> Any:
        if not type(obj).__module__.startswith("torch") or not hasattr(obj, "numpy"):
            return None  # not a tensor (told without importing PyTorch)
        t = obj.detach().cpu()
        try:
            arr = t.numpy()
        except TypeError:  # bfloat16 and other dtypes numpy lacks
            arr = t.float().numpy()
        digest = hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()
        return ("tensor", str(t.dtype), tuple(t.shape), digest)


def _feed_pickle(value: Any, h: Any, where: str) -> None:
    h.update(f"pickle:{type(value).__module__}.{type(value).__qualname__}\n".encode())
    try:
        # a file that feeds the hash: the pickle is never held whole
        _IdentityPickler(types.SimpleNamespace(write=h.update), protocol=4).dump(value)
    except Exception as exc:
        raise TypeError(
            f"the results cache cannot identify {where} ({type(value).__qualname__}): it does "
            f"not pickle ({exc}); leave it out with ignore= or pass something that identifies it"
        ) from exc


@public("pcr_explore.storage")
def content_identity(value: Any) -> str:
    """A hex SHA-256 that changes when *value*'s content changes.

    Parameters
    ----------
    value : object
        Numbers, strings, bytes and None by value; a string or path naming a
        local file or folder also by its files' relative names, sizes and
        modification times (never their bytes); a PCR dataset (an object with
        a ``manifest``) by its manifest; a source with a ``url`` by that url's
        identity and its transcoding settings (``scan_script``, ``quality``,
        ``backend``); numpy arrays by dtype, shape and bytes; lists, tuples,
        dicts, sets and dataclasses by their items or fields; a function by
        its module, name, code (bytecode, constants, nested code, the names it
        uses), default values and the values it closes over, a bound method
        also by its instance and a ``functools.partial`` by its function and
        arguments; classes and builtins by module and name; anything else by
        its pickle, in which each PyTorch tensor (a model's weights, a batch)
        stands as its dtype, shape and bytes' hash.

    Returns
    -------
    str
        64 hex digits.

    Raises
    ------
    TypeError
        Where a value is none of the above and does not pickle.

    Examples
    --------
    >>> content_identity({"sample": 16}) == content_identity({"sample": 16})
    True
    >>> content_identity({"sample": 16}) == content_identity({"sample": 32})
    False
    """
    h = hashlib.sha256()
    _feed(value, h, "the value")
    return h.hexdigest()


def _machine() -> str:
    return f"{platform.node()} {platform.machine()} {platform.processor()} {os.cpu_count()}"


@public("pcr_explore.storage")
class ResultsCache:
    """Expensive results on disk, keyed by their inputs' content and settings.

    Parameters
    ----------
    path : str or path-like, optional
        The folder (created on the first write). Default
        :func:`default_results_dir`: ``$PCR_RESULTS_CACHE``, else
        ``~/.cache/pcr-explore/results``.
    enabled : bool
        False: :meth:`call` always computes and writes nothing (one switch
        for a notebook's "measure again").

    Attributes
    ----------
    hits, misses : int
        Calls answered from disk and calls computed, since creation.

    Examples
    --------
    >>> import tempfile
    >>> cache = ResultsCache(tempfile.mkdtemp())
    >>> def slow_square(x, *, progress=True):
    ...     return x * x
    >>> cache.call(slow_square, 12, progress=False), cache.call(slow_square, 12)
    (144, 144)
    >>> cache.hits, cache.misses
    (1, 1)
    >>> cache.clear()
    1
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, enabled: bool = True) -> None:
        self.path = Path(path).expanduser() if path is not None else default_results_dir()
        self.enabled = enabled
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        state = "" if self.enabled else ", disabled"
        return f"<ResultsCache {str(self.path)!r}: {self.hits} hits, {self.misses} misses{state}>"

    def key(
        self,
        func: Callable[..., Any],
        /,
        *args: Any,
        ignore: Iterable[str] = (),
        per_machine: bool = False,
        **kwargs: Any,
    ) -> str:
        """The key :meth:`call` files ``func(*args, **kwargs)`` under (64 hex digits)."""
        skip = {"progress", *ignore}  # a progress bar never changes a result
        settings = {k: v for k, v in kwargs.items() if k not in skip}
        h = hashlib.sha256()
        name = getattr(func, "__qualname__", type(func).__qualname__)
        h.update(f"pcr-explore {__version__}\n".encode())
        _feed(func, h, name)
        if per_machine:
            h.update(f"machine {_machine()}\n".encode())
        for k, arg in enumerate(args):
            _feed(arg, h, f"argument {k + 1} of {name}")
        for setting in sorted(settings):
            _feed(setting, h, name)
            _feed(settings[setting], h, f"{name}'s {setting}=")
        return h.hexdigest()

    def _entry(self, func: Callable[..., Any], key: str) -> Path:
        name = getattr(func, "__qualname__", type(func).__qualname__)
        folder = "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        return self.path / folder / f"{key}.pickle"

    def call(
        self,
        func: Callable[..., T],
        /,
        *args: Any,
        ignore: Iterable[str] = (),
        per_machine: bool = False,
        **kwargs: Any,
    ) -> T:
        """``func(*args, **kwargs)``, from disk where the same call was computed before.

        Parameters
        ----------
        func : callable
            The function; its result must pickle.
        *args, **kwargs
            Its arguments, as given to it.
        ignore : iterable of str
            Keyword arguments that do not change the result, left out of the
            key (``progress`` always is).
        per_machine : bool
            Also key by this machine (timings).

        Returns
        -------
        object
            What *func* returned, now or on the call that filled the entry.

        Raises
        ------
        TypeError
            Where an argument, or a value *func* closes over or defaults to, cannot
            be identified (see :func:`content_identity`).
        OSError
            Where the entry cannot be written (the result is computed first).
        """
        if not self.enabled:
            self.misses += 1
            return func(*args, **kwargs)
        key = self.key(func, *args, ignore=ignore, per_machine=per_machine, **kwargs)
        entry = self._entry(func, key)
        found, value = _load(entry)
        if found:
            self.hits += 1
            return value  # type: ignore[no-any-return]
        self.misses += 1
        value = func(*args, **kwargs)
        try:
            payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:
            raise TypeError(
                f"the results cache cannot keep what {entry.parent.name} returned "
                f"({type(value).__qualname__}): it does not pickle ({exc})"
            ) from exc
        entry.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(entry, [_MAGIC, hashlib.sha256(payload).digest(), payload])
        return value

    def _files(self) -> list[tuple[Path, bool]]:
        """The cache's regular files, each with True for an entry, False for a torn write.

        Only ``<folder>/<function>/<key>.pickle`` and its temporary files count;
        a link is never followed, so nothing outside the folder is ever listed.
        """
        found = []
        with contextlib.suppress(OSError):  # no folder yet, or it vanished meanwhile
            for sub in self.path.iterdir():
                if sub.is_symlink() or not sub.is_dir():
                    continue
                for f in sub.iterdir():
                    if _OWNED.fullmatch(f.name) and not f.is_symlink() and f.is_file():
                        found.append((f, not f.name.startswith(".")))
        return found

    def clear(self) -> int:
        """Delete every entry; return how many there were.

        Only entries (``<function>/<key>.pickle``) and the temporary files of
        unfinished writes go, then the folders they leave empty: a cache
        pointed at a folder that holds other files leaves those alone, and a
        symbolic link (to a file or a folder) is neither followed nor deleted.
        """
        files = self._files()
        for f, _ in files:
            f.unlink(missing_ok=True)
        for folder in {f.parent for f, _ in files}:
            with contextlib.suppress(OSError):  # not empty: other files, or a new entry
                folder.rmdir()
        return sum(entry for _, entry in files)

    def __len__(self) -> int:
        """How many entries the folder holds."""
        return sum(entry for _, entry in self._files())


def _load(entry: Path) -> tuple[bool, Any]:
    """(True, value) for a whole, checked entry; (False, None) for a missing or corrupt one."""
    try:
        data = entry.read_bytes()
    except OSError:
        return False, None
    head = len(_MAGIC)
    payload = data[head + _DIGEST :]
    if data[:head] != _MAGIC or hashlib.sha256(payload).digest() != data[head : head + _DIGEST]:
        return False, None
    try:
        return True, pickle.loads(payload)
    except Exception:  # a class renamed since: computed again, like a torn entry
        return False, None
