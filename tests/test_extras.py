"""The core install is light, every optional import belongs to an extra, and a missing one is named.

The table in ``pcr_explore/_public.py`` must agree with pyproject.toml: the
core requirements provide no optional module, each extra provides the
modules the table says, and every third-party module the package imports is
provided by the core or by an extra. A subprocess in which the optional
distributions alone are importable (as after ``pip install pcr-explore``)
encodes, reads and tunes, and gets one line naming the extra for the rest.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
import sys
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from pcr_explore._public import EXTRAS, extra_for

tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OPTIONAL = frozenset().union(*EXTRAS.values())


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _requirements(extra: str) -> set[str]:
    """The distributions an extra brings, its references to other extras expanded."""
    names: set[str] = set()
    for requirement in PROJECT["optional-dependencies"][extra]:
        if _name(requirement) == "pcr-explore":
            inner = re.search(r"\[(.*)\]", requirement)
            assert inner is not None, requirement
            for other in inner.group(1).split(","):
                names |= _requirements(other.strip())
        else:
            names |= _with_extras(Requirement(requirement))
    return names


def _with_extras(requirement: Requirement) -> set[str]:
    """A requirement's distribution and those its own extras add (``dask[distributed]``)."""
    names = {_name(requirement.name)}
    for text in distribution(requirement.name).requires or []:
        inner = Requirement(text)
        if inner.marker is not None and any(
            inner.marker.evaluate({"extra": extra}) for extra in requirement.extras
        ):
            names.add(_name(inner.name))
    return names


@functools.cache
def _providers() -> dict[str, list[str]]:
    return packages_distributions()  # a walk over every installed distribution: once


def _distributions(module: str) -> set[str]:
    found = _providers().get(module, [])
    return {d.lower().replace("_", "-") for d in found}


def _third_party_imports() -> set[str]:
    """Top-level names of every module the package imports that is not its own or stdlib."""
    found: set[str] = set()
    for path in (ROOT / "pcr_explore").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                found.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.add(node.module.partition(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names and m != "pcr_explore"}


def test_the_core_requirements_bring_no_optional_module() -> None:
    core = {_name(r) for r in PROJECT["dependencies"]}
    heavy = {"jupyterlab", "bokeh", "ipywidgets", "scikit-image", "scipy", "torch", "jupyter-bokeh"}
    assert core & heavy == set()
    assert {m for m in OPTIONAL if _distributions(m) & core} == set()


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_each_extra_installs_the_modules_the_table_names(extra: str) -> None:
    brought = _requirements(extra)
    provided = {m for m in OPTIONAL if _distributions(m) & brought}
    assert provided == EXTRAS[extra]


def test_every_third_party_import_is_core_or_in_an_extra() -> None:
    core = {_name(r) for r in PROJECT["dependencies"]}
    undeclared = {
        m for m in _third_party_imports() if m not in OPTIONAL and not _distributions(m) & core
    }
    assert undeclared == set()


def test_the_extra_named_is_the_one_made_for_the_use() -> None:
    assert extra_for("scipy", "pcr_explore.swap.model.calibration") == "swap"
    assert extra_for("bokeh", "pcr_explore.auditing._html") == "audit"
    assert extra_for("scipy", "pcr_explore.train.gradient") == "torch"
    assert extra_for("bokeh", "pcr_explore.widgets._explorer") == "lab"
    assert extra_for("bokeh", "pcr_explore.plots._quality") == "plots"
    assert extra_for("skimage", "pcr_explore.encode.sample") == "lab"
    assert extra_for("s3fs", "pcr_explore.read.reader") == "s3"
    assert extra_for("numpy", "pcr_explore.read.reader") is None


def _core_distributions() -> set[str]:
    """The distributions ``pip install pcr-explore`` brings: the core requirements, recursively."""
    todo, seen = [_name(r) for r in PROJECT["dependencies"]], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for text in distribution(name).requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(_name(requirement.name))
    return seen


@pytest.fixture(scope="module")
def core_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Links to the core distributions' files only: a core install's site-packages."""
    site = tmp_path_factory.mktemp("core-site")
    for name in _core_distributions():
        for top in {Path(str(f)).parts[0] for f in distribution(name).files or []}:
            source = Path(str(distribution(name).locate_file(top)))
            if top not in ("..", "__pycache__") and source.exists() and not (site / top).exists():
                (site / top).symlink_to(source)
    return site


def _core_only(site: Path, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run *code* in a Python that sees the standard library, the core's files and this package."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(site)])}
    return subprocess.run(
        [sys.executable, "-S", "-c", "import json, sys\n" + code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=site,
    )


CORE_WORK = """
from pathlib import Path
import numpy as np
from PIL import Image
import pcr_explore as pcr

root = Path(sys.argv[1])
(root / "src" / "a").mkdir(parents=True)
for i in range(4):
    y, x = np.mgrid[0:48, 0:64]
    pixels = np.stack([(x * 4 + i) % 256, (y * 5) % 256, (x + y) % 256], -1).astype(np.uint8)
    Image.fromarray(pixels).save(root / "src" / "a" / f"{i}.png")
pcr.encode_dataset(root / "src", root / "out", progress=False, workers=1)
ds = pcr.open_dataset(str(root / "out"))
images = [image for image, _ in ds.iter(scan=2)]
result = pcr.tune(ds, target=0.9, sample=4, progress=False)
report = pcr.audit(root / "src", sample=2, workers=1, progress=False)
try:
    report.to_html(root / "audit.html")
    html = "written"
except pcr.MissingExtraError as exc:
    html = str(exc)
print(json.dumps({"images": len(images), "level": result.scan, "audited": report.images,
                  "html": html}))
"""


def test_the_core_brings_no_notebook_plot_or_training_stack(core_site: Path) -> None:
    heavy = {"jupyterlab", "bokeh", "ipywidgets", "scikit-image", "scipy", "torch"}
    assert _core_distributions() & heavy == set()
    assert not (core_site / "scipy").exists() and (core_site / "numpy").exists()


def test_encoding_reading_tuning_and_auditing_need_only_the_core(
    core_site: Path, tmp_path: Path
) -> None:
    done = _core_only(core_site, CORE_WORK, str(tmp_path))
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["images"] == 4 and out["audited"] == 4
    assert 1 <= out["level"] <= 10
    # the audit's HTML report draws with Bokeh: the audit extra
    assert out["html"].endswith("pip install 'pcr-explore[audit]'")


@pytest.mark.parametrize(
    ("name", "extra"),
    [
        ("widgets.ScanExplorer", "lab"),
        ("build_sample('unused')", "lab"),
        ("swap.get_codec('zstd').encode(__import__('numpy').zeros(8))", "swap"),
        ("train.train_at_levels('unused', val='unused')", "torch"),
    ],
)
def test_a_name_whose_extra_is_missing_says_which_to_install(
    core_site: Path, name: str, extra: str
) -> None:
    code = (
        "import pcr_explore\n"
        "try:\n"
        f"    pcr_explore.{name}\n"
        "except pcr_explore.MissingExtraError as exc:\n"
        "    print(exc)\n"
    )
    done = _core_only(core_site, code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(f"pip install 'pcr-explore[{extra}]'")
    assert len(done.stdout.strip().splitlines()) == 1


def test_an_import_from_outside_the_package_gets_pythons_own_error(core_site: Path) -> None:
    code = (
        "import pcr_explore.read\n"
        "try:\n"
        "    import scipy\n"
        "except ModuleNotFoundError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = _core_only(core_site, code)
    assert done.stdout.strip() == "ModuleNotFoundError No module named 'scipy'"


def test_the_command_line_names_the_missing_extra_in_one_line(
    core_site: Path, tmp_path: Path
) -> None:
    code = "from pcr_explore.cli import main\nsys.exit(main(['sample', sys.argv[1]]))\n"
    done = _core_only(core_site, code, str(tmp_path / "sample"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "pcr-explore: error: pcr_explore.encode.sample needs skimage, which is not installed: "
        "pip install 'pcr-explore[lab]'"
    ]
