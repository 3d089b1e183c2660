"""The package's import graph: layers point one way and nothing imports in a circle.

Every import in ``pcr_explore/`` counts, including those inside functions
(an optional dependency imported lazily is still an arrow); imports under
``if TYPE_CHECKING:`` do not, since they never run. docs/ARCHITECTURE.md
describes the same layers in words.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pcr_explore

ROOT = Path(pcr_explore.__file__).parent

# Lowest first. A module may import its own layer or a lower one.
LAYERS: list[tuple[str, ...]] = [
    ("errors", "_atomic", "_json", "_pool", "_lock", "_version"),
    ("_frame", "jpeg", "_decoders", "_eighth", "_orient", "_tjtransform", "scan_script", "metrics"),
    ("transcode", "format", "prefix", "manifest", "summary", "remote", "cache", "_output"),
    ("discover", "_journal", "_fetch", "_plan", "_shard", "_spool"),
    ("encoder", "reader", "distributed"),
    ("sources", "loader", "throughput", "compare", "sample", "verify"),
    ("quality",),
    ("tune_result", "tuner"),
    ("plots",),  # figure builders shared by the audit report and the widgets
    ("audit", "train", "swap"),
    ("widgets", "cli", "__main__"),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    t = node.test
    return (isinstance(t, ast.Name) and t.id == "TYPE_CHECKING") or (
        isinstance(t, ast.Attribute) and t.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    out: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _edges(name: str, path: Path) -> set[str]:
    """Modules of the package that *name* imports."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    targets: set[str] = set()
    for node in _runtime_imports(ast.parse(path.read_text(encoding="utf-8"))):
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


def _layer(name: str) -> int | None:
    parts = name.split(".")
    if len(parts) == 1:
        return len(LAYERS)  # the package facade sits above everything
    top = parts[1]
    for i, layer in enumerate(LAYERS):
        if top in layer:
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


def test_import_graph_has_no_cycles() -> None:
    # Tarjan's strongly connected components: any component of more than one
    # module is a circle.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in GRAPH[v]:
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

    for v in GRAPH:
        if v not in index:
            strong(v)
    assert cycles == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_stay_small(name: str) -> None:
    lines = MODULES[name].read_text(encoding="utf-8").count("\n")
    assert lines <= 450, f"{MODULES[name]}: {lines} lines; split it by idea"


def test_the_checker_sees_arrows() -> None:
    # Guard against a checker that finds nothing: known arrows must be there.
    assert "pcr_explore.jpeg" in GRAPH["pcr_explore.format"]
    assert "pcr_explore.reader" in GRAPH["pcr_explore.loader"]
    assert "pcr_explore.cli._dataset" in GRAPH["pcr_explore.cli"]
