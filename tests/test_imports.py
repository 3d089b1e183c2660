"""What `import pcr_explore` costs: reading and writing records loads no plots, widgets or audit."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pcr_explore

HEAVY = (
    "bokeh",
    "ipywidgets",
    "anywidget",
    "scipy",
    "skimage",
    "imagehash",
    "pandas",
    "torch",
    "dask",
    "s3fs",
)
OWN_HEAVY = ("auditing", "plots", "widgets", "quality", "train", "swap", "cli")

READ_AND_WRITE = """
import json, sys
from pathlib import Path
import numpy as np
from PIL import Image
import pcr_explore as pcr

root = Path(sys.argv[1])
(root / "src" / "a").mkdir(parents=True)
for i in range(3):
    pixels = np.random.default_rng(i).integers(0, 255, (24, 32, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(root / "src" / "a" / f"{i}.jpg")
pcr.encode_dataset(root / "src", root / "out", progress=False, workers=1)
ds = pcr.open_dataset(str(root / "out"))
ds.image(0, scan=2)
list(ds.iter(scan=3))
pcr.verify_dataset(ds)
pcr.open_source(root / "src").jpeg_bytes(0, 2)
print(json.dumps(sorted(sys.modules)))
"""


def _loaded_by(code: str, *args: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, check=True
    )
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_reading_and_writing_loads_nothing_heavy(tmp_path: Path) -> None:
    loaded = _loaded_by(READ_AND_WRITE, str(tmp_path))
    assert "pcr_explore.read.reader" in loaded  # the script did read records
    assert sorted(m for m in loaded if m.split(".")[0] in HEAVY) == []
    own = [m for m in loaded if m.startswith("pcr_explore.") and m.split(".")[1] in OWN_HEAVY]
    assert own == []


def test_the_bare_import_loads_only_the_facade() -> None:
    code = "import json, sys, pcr_explore; print(json.dumps(sorted(sys.modules)))"
    loaded = _loaded_by(code)
    assert sorted(m for m in loaded if m.startswith("pcr_explore")) == [
        "pcr_explore",
        "pcr_explore._public",
    ]


def test_the_torch_adapter_imports_torch_only_when_used(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from _pcr_data import random_dataset

    code = (
        "import json, sys\n"
        "import pcr_explore.read.loader, pcr_explore.read.mix\n"
        "from pcr_explore.read import PCRIterableDataset, MixedDataset, mix, torch_dataset\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    loaded = _loaded_by(code)
    assert "pcr_explore.read.mix" in loaded and "torch" not in loaded
    # what it makes is a torch IterableDataset, here and where a DataLoader worker
    # started by spawn or forkserver unpickles it
    url = str(random_dataset(tmp_path / "ds", images=2, records=1))
    make = (
        "import pickle, sys\n"
        "from torch.utils.data import IterableDataset\n"
        "from pcr_explore.read import mix, torch_dataset\n"
        "both = [torch_dataset(sys.argv[1], size=(8, 8)), mix([sys.argv[1]])]\n"
        "assert all(isinstance(ds, IterableDataset) for ds in both)\n"
        "pickle.dump(both, open(sys.argv[2], 'wb'))\n"
    )
    load = (
        "import pickle, sys\n"
        "both = pickle.load(open(sys.argv[1], 'rb'))\n"
        "from torch.utils.data import IterableDataset\n"
        "print(sum(isinstance(ds, IterableDataset) for ds in both))\n"
    )
    saved = str(tmp_path / "datasets.pickle")
    subprocess.run([sys.executable, "-c", make, url, saved], check=True)
    out = subprocess.run([sys.executable, "-c", load, saved], capture_output=True, text=True)
    assert out.stdout.split() == ["2"], out.stderr


def test_the_verbs_load_on_first_use() -> None:
    code = (
        "import json, sys, pcr_explore as pcr\n"
        "assert callable(pcr.audit) and callable(pcr.tune) and callable(pcr.swap.simulate)\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    loaded = _loaded_by(code)
    assert {"pcr_explore.auditing._audit", "pcr_explore.quality.tune"} <= loaded
    assert "pcr_explore.swap.simulator.simulate" in loaded


def test_audit_stays_the_function_once_its_package_is_imported() -> None:
    # The subpackage is `auditing`, so importing it never rebinds `pcr.audit`.
    importlib.import_module("pcr_explore.auditing._report")
    assert callable(pcr_explore.audit)


def _packages() -> list[str]:
    root = Path(pcr_explore.__file__).parent
    return sorted(
        ".".join(("pcr_explore", *p.parent.relative_to(root).parts))
        for p in root.rglob("__init__.pyi")
    )


@pytest.mark.parametrize("name", _packages())
def test_every_lazy_name_resolves(name: str) -> None:
    package = importlib.import_module(name)
    missing = [n for n in package.__all__ if not hasattr(package, n)]
    assert missing == []
    assert set(package.__all__) <= set(dir(package))


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="open_datset"):
        pcr_explore.open_datset  # noqa: B018


def test_public_objects_name_the_module_users_import_them_from() -> None:
    first: dict[int, str] = {}
    for name in sorted(_packages(), key=lambda n: (n.count("."), n)):
        package = importlib.import_module(name)
        for attr in package.__all__:
            obj = getattr(package, attr)
            if isinstance(obj, type) or callable(obj) and hasattr(obj, "__code__"):
                first.setdefault(id(obj), name)
                assert obj.__module__ == first[id(obj)], f"{name}.{attr}"
    assert pcr_explore.PCRDataset.__module__ == "pcr_explore"
    assert pcr_explore.swap.simulate.__module__ == "pcr_explore.swap"


def test_public_objects_pickle_by_their_stable_name() -> None:
    import pickle

    opts = pcr_explore.TuneOptions(confidence=0.9)
    data = pickle.dumps(opts, protocol=0)  # protocol 0 writes the global's name as text
    assert b"cpcr_explore\nTuneOptions\n" in data
    assert pickle.loads(data) == opts


def _api_sections() -> dict[str, set[str]]:
    """docs/API.md's tables: section ``## `package``` -> the names in its first column."""
    text = (Path(pcr_explore.__file__).parent.parent / "docs" / "API.md").read_text("utf-8")
    sections: dict[str, set[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## `"):
            current = line.split("`")[1]
            sections[current] = set()
        elif current and line.startswith("| `"):
            sections[current].add(line.split("`")[1])
    return sections


def test_docs_api_lists_every_stable_name() -> None:
    sections = _api_sections()
    for name in _packages():
        package = importlib.import_module(name)
        names = {n for n in package.__all__ if not inspect.ismodule(getattr(package, n))}
        assert sections.get(name) == names, f"docs/API.md, section {name}"


# Functions whose second positional parameters are operands, not settings:
# what they write to (out, path), the other side of a comparison, a codec and
# its array, a model and its data.
OPERANDS = {
    "encode_dataset": ("src", "out"),
    "export_dataset": ("dataset", "out"),
    "ms_ssim": ("a", "b"),
    "ssim": ("a", "b"),
    "psnr": ("a", "b"),
    "measure": ("codec", "array"),
    "evaluate": ("model", "images", "labels"),
    "train_epoch": ("model", "optimizer", "images", "labels"),
    "stack_images": ("arrays", "labels"),
    "extract": ("archive", "out"),
    "prepare_split": ("src", "out"),
    "split_folder": ("src", "out"),
    "sharpness_task": ("photos", "out"),
    "write_html": ("result", "path"),
    "set_font_size": ("figure", "size"),
    "check_manifest": ("m", "path"),
    "parse_header": ("buf", "path", "file_size"),
    "read_header": ("f", "path", "file_size"),
    "encode_record": ("images", "num_scans", "scan_script"),
    "write_record": ("path", "images", "num_scans", "scan_script"),
    "difference_map": ("level", "full"),
    "level_strip": ("source", "i"),
    "level_note": ("level_bytes", "k", "script"),
    "scan_content": ("k", "script"),
}


def test_settings_are_keywords_in_every_public_function() -> None:
    found = {}
    for name in _packages():
        package = importlib.import_module(name)
        for attr in package.__all__:
            obj = getattr(package, attr)
            if not inspect.isfunction(obj):
                continue
            kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            params = [p.name for p in inspect.signature(obj).parameters.values() if p.kind in kinds]
            if len(params) > 1:
                found[attr] = tuple(params)
    assert found == {k: v for k, v in OPERANDS.items() if len(v) > 1}


def test_only_public_names_are_marked_public() -> None:
    import ast

    root = Path(pcr_explore.__file__).parent
    marked_private = []
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.startswith("_"):
                for d in node.decorator_list:
                    if isinstance(d, ast.Call) and getattr(d.func, "id", "") == "public":
                        marked_private.append(f"{path.name}:{node.lineno} {node.name}")
    assert marked_private == []


# What `pcr-explore --help` and every sub-command's `--help` may load from
# the package besides pcr_explore.cli.*: the facade, the errors, and the two
# light modules whose values the help text shows (the audit's checks and
# thresholds, the swap-train networks). Anything more is an import that
# belongs inside the function running the sub-command. `--version` adds the
# version (importlib.metadata) and nothing else.
CLI_HELP_LOADS = {
    "pcr_explore",
    "pcr_explore._public",
    "pcr_explore.errors",
    "pcr_explore.auditing",
    "pcr_explore.auditing._checks",
    "pcr_explore.swap",
    "pcr_explore.swap.capture",
    "pcr_explore.swap.capture._torch_ops",
    "pcr_explore.swap.capture.nets",
}
# ... and of what is not in the standard library, only the facade's loader.
CLI_HELP_THIRD_PARTY = {"lazy_loader"}
CLI_HEAVY = ("numpy", "scipy", "PIL", "torch", "bokeh", "dask", "skimage", "urllib3", *HEAVY)

CLI_HELP = """
import json, sys
from pcr_explore.cli import main
for argv in json.loads(sys.argv[1]):
    try:
        main(argv)
    except SystemExit:
        pass
print(json.dumps(sorted(sys.modules)))
"""


def _cli_help_argvs() -> list[list[str]]:
    """``--help``, and ``--help`` of every sub-command and sub-sub-command."""
    import argparse

    from pcr_explore.cli import build_parser

    def commands(parser: argparse.ArgumentParser, prefix: list[str]) -> list[list[str]]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found.append([*prefix, name])
                    found += commands(sub, [*prefix, name])
        return found

    return [["--help"]] + [[*c, "--help"] for c in commands(build_parser(), [])]


def _cli_loads(argvs: list[list[str]]) -> tuple[set[str], set[str]]:
    """The package's modules outside cli/, and the other top-level names, that *argvs* load."""
    bare = _loaded_by("import json, sys; print(json.dumps(sorted(sys.modules)))")
    loaded = _loaded_by(CLI_HELP, json.dumps(argvs)) - bare
    assert sorted(m for m in loaded if m.split(".")[0] in CLI_HEAVY) == []
    own = {m for m in loaded if m.split(".")[0] == "pcr_explore"}
    others = {m.split(".")[0] for m in loaded if m.split(".")[0] != "pcr_explore"}
    return {m for m in own if not m.startswith("pcr_explore.cli")}, others


def test_the_command_line_help_loads_no_numpy_and_no_subcommand() -> None:
    argvs = _cli_help_argvs()
    assert ["encode", "--help"] in argvs and ["cache", "info", "--help"] in argvs
    assert len(argvs) == 19  # --help, 15 sub-commands, 3 cache verbs
    own, others = _cli_loads(argvs)
    assert own == CLI_HELP_LOADS
    assert others - sys.stdlib_module_names == CLI_HELP_THIRD_PARTY


def test_the_command_line_version_loads_only_the_version_more() -> None:
    own, others = _cli_loads([["--version"]])
    assert own == CLI_HELP_LOADS | {"pcr_explore._version"}
    assert others - sys.stdlib_module_names == CLI_HELP_THIRD_PARTY


CACHE_INFO = """
import json, sys
from pcr_explore.cli import main
for argv in (["cache", "info", sys.argv[1]], ["cache", "info", "--json", sys.argv[1]]):
    main(argv)
print(json.dumps(sorted(sys.modules)))
"""


def test_cache_info_loads_no_numpy(tmp_path: Path) -> None:
    import numpy as np
    from PIL import Image

    import pcr_explore as pcr

    src = tmp_path / "src" / "a"
    src.mkdir(parents=True)
    for i in range(2):
        pixels = np.random.default_rng(i).integers(0, 255, (16, 24, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(src / f"{i}.jpg")
    pcr.encode_dataset(tmp_path / "src", tmp_path / "out", progress=False, workers=1)
    cache = tmp_path / "cache"
    list(pcr.open_dataset(str(tmp_path / "out"), cache_dir=cache).iter(scan=2))
    out = subprocess.run(
        [sys.executable, "-c", CACHE_INFO, str(cache)], capture_output=True, text=True, check=True
    )
    assert "level 2: 1 record" in out.stdout  # the cache held something to describe
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert sorted(m for m in loaded if m.split(".")[0] in CLI_HEAVY) == []
