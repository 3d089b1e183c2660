"""The package's shape: layers point one way, nothing imports in a circle, functions stay small.

Every import in ``pcr_explore/`` counts: those inside functions (a lazy
import is still an arrow), those under ``if TYPE_CHECKING:`` (a circle a type
checker needs is still a circle) and those in the ``__init__.pyi`` stubs that
list each package's lazily loaded names. docs/ARCHITECTURE.md describes the
same layers in words.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pcr_explore

ROOT = Path(pcr_explore.__file__).parent

# Lowest first; a module belongs to the longest prefix that names it and may
# import its own layer or a lower one.
LAYERS: list[tuple[str, ...]] = [
    ("_public", "errors", "_version", "_json", "_pool"),
    ("storage",),  # atomic writes, the lock, remote stores, the prefix cache
    ("jpeg",),
    ("quality.metrics",),
    ("records",),
    ("encode",),
    ("read",),
    ("quality",),
    ("plots",),  # figure builders shared by the audit report and the widgets
    ("auditing", "train"),
    ("budgeting",),  # the bytes a training run needs: quality, gradients, accuracy, decode cost
    ("swap.codecs", "swap.traces"),
    ("swap.model",),
    ("swap.capture",),
    ("swap.training",),
    ("swap.simulator",),
    ("swap",),
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
    top = sorted(p.name for p in ROOT.iterdir() if not p.name.startswith((".", "__")))
    swap = sorted(p.name for p in (ROOT / "swap").iterdir() if not p.name.startswith((".", "__")))
    assert len(top) <= 18, top
    assert len(swap) <= 8, swap
