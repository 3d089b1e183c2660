"""The package's shape: layers point one way, nothing imports in a circle, functions stay small.

Every import in ``pcr_explore/`` counts: those inside functions (a lazy
import is still an arrow), those under ``if TYPE_CHECKING:`` (a circle a type
checker needs is still a circle) and those in the ``__init__.pyi`` stubs that
list each package's lazily loaded names. docs/ARCHITECTURE.md describes the
same layers in words.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
from pathlib import Path

import pytest

import pcr_explore

ROOT = Path(pcr_explore.__file__).parent

# Lowest first; a module belongs to the longest prefix that names it and may
# import its own layer or a lower one.
LAYERS: list[tuple[str, ...]] = [
    ("_public", "errors", "_checks", "_version", "_json", "_pool"),
    ("storage",),  # atomic writes, the lock, remote stores, the prefix cache
    # compressed tensor swapping: a product of its own on the shared base, below every
    # module of the records' product (photos and models come to it as arguments)
    ("swap.codecs", "swap.traces"),
    ("swap.model",),
    ("swap.capture",),
    ("swap.training",),
    ("swap.simulator",),
    ("swap",),
    ("jpeg",),
    ("quality.metrics",),
    ("records",),
    ("encode",),
    ("read",),
    ("quality",),
    ("plots",),  # figure builders shared by the audit report and the widgets
    ("auditing", "train"),
    ("budgeting",),  # the bytes a training run needs: quality, gradients, accuracy, decode cost
    ("widgets", "cli", "__main__"),
]

# A function's body (its docstring left out) longer than this holds more than
# one idea: split it into named steps.
MAX_BODY_LINES = 100


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}
STUBS = {_module_name(p): p for p in sorted(ROOT.rglob("__init__.pyi"))}


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]


def _edges(name: str, path: Path) -> set[str]:
    """Modules of the package that *name* imports (at run time or for type checking)."""
    package = name if path.stem == "__init__" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets |= {a.name for a in node.names if a.name.startswith("pcr_explore")}
            continue
        if node.level:
            base = package.split(".")
            base = base[: len(base) - (node.level - 1)]
            mod = ".".join(base + ([node.module] if node.module else []))
        else:
            mod = node.module or ""
        if not mod.startswith("pcr_explore"):
            continue
        for alias in node.names:
            sub = f"{mod}.{alias.name}"
            targets.add(sub if sub in MODULES else mod)
    targets.discard(name)
    return {t for t in targets if t in MODULES}


GRAPH = {name: _edges(name, path) for name, path in MODULES.items()}
for _name, _stub in STUBS.items():
    GRAPH[_name] |= _edges(_name, _stub)


def _layer(name: str) -> int | None:
    parts = name.split(".")[1:]
    if not parts:
        return len(LAYERS)  # the package facade sits above everything
    for n in range(len(parts), 0, -1):
        prefix = ".".join(parts[:n])
        for i, layer in enumerate(LAYERS):
            if prefix in layer:
                return i
    return None


def test_every_module_has_a_layer() -> None:
    assert [m for m in MODULES if _layer(m) is None] == []


def test_no_module_imports_a_higher_layer() -> None:
    upward = [
        f"{a} (layer {_layer(a)}) imports {b} (layer {_layer(b)})"
        for a, targets in GRAPH.items()
        for b in sorted(targets)
        if (_layer(b) or 0) > (_layer(a) or 0)
    ]
    assert upward == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    # Tarjan's strongly connected components: any of more than one module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                cycles.append(sorted(comp))

    for v in graph:
        if v not in index:
            strong(v)
    return cycles


def test_import_graph_has_no_cycles() -> None:
    assert _cycles(GRAPH) == []


def test_the_cycle_check_finds_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == [["a", "b", "c"]]


def _long_functions(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if ast.get_docstring(node, clean=False) is not None:
            body = body[1:]
        if body and (n := body[-1].end_lineno - body[0].lineno + 1) > MAX_BODY_LINES:  # type: ignore[operator]
            out.append(f"{path.name}:{node.lineno} {node.name}() body is {n} lines")
    return out


@pytest.mark.parametrize("name", sorted(MODULES))
def test_functions_stay_small(name: str) -> None:
    assert _long_functions(MODULES[name]) == []


def test_the_size_check_measures_bodies(tmp_path: Path) -> None:
    doc = '    """' + "doc\n" * 150 + '    """\n'
    f = tmp_path / "m.py"
    f.write_text("def short():\n" + doc + "    return 1\n\ndef long():\n" + "    x = 1\n" * 101)
    assert _long_functions(f) == ["m.py:155 long() body is 101 lines"]


def test_the_checker_sees_arrows() -> None:
    # Guard against a checker that finds nothing: known arrows must be there.
    assert "pcr_explore.jpeg" in GRAPH["pcr_explore.records.format"]
    assert "pcr_explore.read.reader" in GRAPH["pcr_explore.read.loader"]
    assert "pcr_explore.cli._dataset" in GRAPH["pcr_explore.cli"]
    assert "pcr_explore.read.reader" in GRAPH["pcr_explore"]  # through __init__.pyi


def test_top_levels_are_few() -> None:
    # The folder list tells the story: a newcomer finds each idea by its name.
    # py.typed (PEP 561's marker for type checkers) holds no idea
    top = sorted(
        p.name
        for p in ROOT.iterdir()
        if not p.name.startswith((".", "__")) and p.name != "py.typed"
    )
    swap = sorted(p.name for p in (ROOT / "swap").iterdir() if not p.name.startswith((".", "__")))
    assert len(top) <= 19, top
    assert len(swap) <= 8, swap


# -- the calling convention of methods and constructors -------------------------------
#
# tests/test_imports.py holds every public function to docs/API.md's convention: its
# subject is the one positional parameter (or the operands it lists), every setting a
# keyword. The public classes' methods (their own, not those inherited from ipywidgets,
# Bokeh or PyTorch) and constructors are held to the same rule here, so that
# ``ds.iter(3, True)`` is Python's TypeError, not a bool taken for a size. Dunder
# methods (the protocols: ``__getitem__``, ``__iter__``...) and private ones are not
# settings' places; a dataclass's generated constructor is its list of fields, in
# the order its repr prints them, and counts only for the settings objects users
# build (``*Options``), which take keywords only.
#
# Exempt, each with its reason: methods whose positional parameters are operands.
_ADDRESS = "an image's address: which image and at which level, as ds[i] at a level"
METHOD_OPERANDS: dict[str, tuple[str, ...]] = {
    # read
    "PCRDataset.jpeg_bytes": ("i", "scan"),  # _ADDRESS
    "PCRDataset.image": ("i", "scan"),  # _ADDRESS
    "PCRDataset.read_record": ("r", "scan"),  # a record's prefix: which record, how far
    # a span: record, first and end image, level (the pipeline's Span and its level)
    "PCRDataset.read_span": ("r", "start", "stop", "scan"),
    "FolderSource.jpeg_bytes": ("i", "scan"),  # _ADDRESS
    "FolderSource.image": ("i", "scan"),  # _ADDRESS
    "LevelSource.jpeg_bytes": ("i", "scan"),  # _ADDRESS (the protocol both follow)
    "OnError.handle": ("where", "exc"),  # on_error's f(where, error)
    "MixedDataset.quota": ("worker", "workers"),  # a worker's place, as get_worker_info's
    "ScanSchedule.ramp": ("start", "end"),  # a range's two ends, as range(start, stop)
    # made by a function, from what it opened or checked: not a user's call
    "PCRDataset.__init__": ("fs", "root", "manifest", "url"),  # open_dataset
    "MixedDataset.__init__": ("parts", "weights", "seed", "samples"),  # read.mix
    "PCRIterableDataset.__init__": (  # read.torch_dataset
        "url",
        "scan",
        "size",
        "shuffle",
        "seed",
        "transform",
        "mode",
        "rank",
        "world_size",
        "schedule",
        "batch_size",
        "whole_records",
        "options",
        "probe",
    ),  # fmt: skip
    # records: data and the file it came from (for messages), as check_manifest
    "DatasetSummary.from_manifest": ("manifest", "path"),
    "Manifest.from_json": ("m", "path"),
    "RecordHeader.piece_ranges": ("i", "scan"),  # _ADDRESS
    "RecordHeader.check_pieces": ("i", "pieces"),  # an image and its pieces
    # quality
    "QualityCurve.from_values": ("values", "level_bytes"),  # the measured table, its bytes
    "ScriptCurve.image": ("name", "level"),  # _ADDRESS
    "ScriptCurve.share": ("name", "reference"),  # two sides of a comparison
    "ScriptComparison.level_at": ("name", "fraction"),  # the point looked up
    "LevelCache.jpeg": ("i", "scan"),  # _ADDRESS
    "LevelCache.display": ("i", "scan"),  # _ADDRESS
    "LevelCache.pixels": ("i", "scan"),  # _ADDRESS
    "LevelCache.views": ("i", "scan"),  # _ADDRESS
    "LevelCache.per_image": ("key", "i", "make"),  # a cache's key and maker, as setdefault
    "LevelCache.cached": ("key", "i"),  # the same key
    "ScanCoverage.grid": ("component", "values"),  # the values laid out on the grid
    # swap: a model's inputs, the two sides of a comparison, a table's entry
    "Calibration.from_times": ("codec", "n", "nnz", "compress_s", "decompress_s"),
    "Codec.encoded_size": ("n", "sparsity"),
    "Codec.size_for_nnz": ("n", "nnz"),
    "Codec.error": ("original", "decoded"),
    "CodecError.between": ("original", "decoded"),
    "DeviceProfile.compute_time": ("flops", "mem_bytes"),
    "DeviceProfile.with_codec": ("codec", "cost"),
    # widgets
    "TrainingExplorer.__init__": ("train", "val"),  # the two datasets, as evaluate's
}

# Settings still positional in modules being changed elsewhere: each is to become a
# keyword, and its entry to go (the test fails on an entry that no longer holds).
PENDING: dict[str, tuple[str, ...]] = {
    "EncodeOptions.__init__": (  # encode/encoder.py: @dataclass(kw_only=True)
        "backend",
        "quality",
        "shuffle",
        "strict",
        "parallel",
        "on_record",
        "image_column",
        "label_column",
    ),  # fmt: skip
    "RecordHeader.assemble": ("i", "pieces", "verify"),  # records/format.py: verify
    "PCRIterableDataset.spans": ("epoch", "shard", "num_shards", "whole_records"),  # loader
    "PCRIterableDataset.sequence": ("epoch", "shard", "num_shards", "whole_records"),
    "ScanGridFigure.update": ("coverage", "title"),  # plots/_scan_grid.py: title
    "ScriptExplorer.__init__": ("folder", "scripts"),  # as compare_scripts(folder, *, scripts)
}

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def _generated_init(owner: type, fn: object) -> bool:
    # dataclasses write __init__ with exec(): it has no file
    return (
        dataclasses.is_dataclass(owner)
        and getattr(fn, "__code__", None) is not None
        and (
            fn.__code__.co_filename == "<string>"  # type: ignore[attr-defined]
        )
    )


def positional_settings(cls: type) -> dict[str, tuple[str, ...]]:
    """``Class.method`` -> its positional parameters, where more than one, for *cls*'s
    public methods and constructor defined in the package (a subclass's override first).
    """
    found: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for owner in cls.__mro__:
        ours = owner.__module__.startswith("pcr_explore")
        for name, attr in vars(owner).items():
            if name in seen or (name.startswith("_") and name != "__init__"):
                continue
            seen.add(name)
            fn = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
            if not ours or not inspect.isfunction(fn):
                continue  # properties, attributes, and what a library's base class defines
            if name == "__init__" and _generated_init(owner, fn):
                if not cls.__name__.endswith("Options"):
                    continue  # a record's fields
            params = [
                p.name for p in inspect.signature(fn).parameters.values() if p.kind in _POSITIONAL
            ]
            if not isinstance(attr, staticmethod):
                params = params[1:]  # self or cls
            if len(params) > 1:  # named where it is defined, once for all its subclasses
                found[f"{owner.__name__}.{name}"] = tuple(params)
    return found


def _public_classes() -> list[type]:
    packages = sorted(
        ".".join(("pcr_explore", *p.parent.relative_to(ROOT).parts))
        for p in ROOT.rglob("__init__.pyi")
    )
    classes: dict[int, type] = {}
    for name in packages:
        package = importlib.import_module(name)
        for attr in package.__all__:
            obj = getattr(package, attr)
            if inspect.isclass(obj) and not issubclass(obj, BaseException):
                classes[id(obj)] = obj
    return list(classes.values())


def test_settings_are_keywords_in_public_methods_and_constructors() -> None:
    classes = _public_classes()
    found: dict[str, tuple[str, ...]] = {}
    for cls in classes:
        found.update(positional_settings(cls))
    allowed = {**METHOD_OPERANDS, **PENDING}
    assert {k: v for k, v in found.items() if allowed.get(k) != v} == {}
    # an entry whose method changed goes too (one of a class not public now is left)
    names = {c.__name__ for c in classes}
    assert [k for k in allowed if k not in found and k.split(".")[0] in names] == []


def test_the_method_check_finds_positional_settings() -> None:
    @dataclasses.dataclass(frozen=True)
    class FakeOptions:
        quality: int = 90
        strict: bool = False

    @dataclasses.dataclass(frozen=True, kw_only=True)
    class KeywordOptions:
        quality: int = 90
        strict: bool = False

    @dataclasses.dataclass(frozen=True)
    class FakeResult:  # a record's fields: not settings
        scan: int
        value: float

    class Base:
        def iter(self, scan: int | None = None, size: int | None = None) -> None: ...

    class Fake(Base):
        def __init__(self, source: str, workers: int = 1) -> None: ...

        def image(self, i: int, *, size: int | None = None) -> None: ...

        def iter(self, scan: int | None = None, *, size: int | None = None) -> None: ...

        def _private(self, a: int, b: int) -> None: ...

        def __getitem__(self, i: int) -> None: ...

        @classmethod
        def load(cls, path: str, strict: bool = True) -> None: ...

        @staticmethod
        def pair(a: int, b: int) -> None: ...

    for c in (FakeOptions, KeywordOptions, FakeResult, Base, Fake):
        c.__module__ = "pcr_explore.fake"
    assert positional_settings(Fake) == {
        "Fake.__init__": ("source", "workers"),
        "Fake.load": ("path", "strict"),
        "Fake.pair": ("a", "b"),
    }  # Fake.iter overrides Base.iter, whose size was positional
    assert positional_settings(Base) == {"Base.iter": ("scan", "size")}
    assert positional_settings(FakeOptions) == {"FakeOptions.__init__": ("quality", "strict")}
    assert positional_settings(KeywordOptions) == positional_settings(FakeResult) == {}
    # a library's base class is not the package's: its methods are not checked
    Base.__module__ = "ipywidgets"
    assert positional_settings(Base) == {}
