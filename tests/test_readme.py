"""The README's tour runs as written, and the README and docs/ point at things that exist.

README.md marks each fenced block with an HTML comment on the line before
its fence (invisible on GitHub): ``<!-- tour: run -->`` for a block this
test runs, or ``<!-- tour: skip KEY -->`` for one it shows without running,
KEY naming the reason in ``NOT_RUN`` below. The blocks marked ``run`` run in
their order in the README, in one empty folder, against the installed
package: a shell block through ``bash -e``, a Python block as a fresh
``python -`` (each stands alone, as the README says).

The other tests check that every relative link and ``#anchor`` in
README.md and docs/*.md resolves (GitHub's heading anchors), that
docs/README.md indexes every page, and that the sub-commands, Makefile
targets and notebooks the documents name are the real ones.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]

#: The blocks the README shows but the tour test does not run, by the key in
#: their marker, each with its reason.
NOT_RUN = {
    "make": "`make lab` installs into .venv and starts JupyterLab, which runs until "
    "stopped; `make test` runs this suite",
    "venv": "activates .venv in the reader's shell; the test puts the interpreter that runs "
    "it on the PATH instead",
    "own-data": "needs the reader's own photos, and `make flowers` downloads 229 MB",
    "notebook": "a widget needs a notebook to show in; tests/test_widgets.py and "
    "tests/test_notebooks.py run the widgets",
}

_MARKER = re.compile(r"<!-- tour: (run|skip ([\w-]+)) -->")
_FENCE = re.compile(r"^(`{3,})(.*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a Markdown file."""

    line: int  # 1-based line of the opening fence
    lang: str
    marker: str | None  # "run", "skip KEY" or None
    code: str


def fenced_blocks(text: str) -> list[Block]:
    """Every fenced block, with the tour marker on the line before its fence."""
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, fence, lang = i, m.group(1), m.group(2).strip()
        i += 1
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith(fence):
            body.append(lines[i])
            i += 1
        marked = _MARKER.fullmatch(lines[start - 1].strip()) if start else None
        blocks.append(Block(start + 1, lang, marked.group(1) if marked else None, "\n".join(body)))
        i += 1
    return blocks


def prose(text: str) -> str:
    """*text* without its fenced blocks (headings and links in code are not Markdown)."""
    out: list[str] = []
    fence = None
    for line in text.splitlines():
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            out.append("")
        elif fence is not None:
            fence = None if line.startswith(fence) else fence
            out.append("")
        else:
            out.append(line)
    return "\n".join(out)


def anchors(path: Path) -> set[str]:
    """The anchors GitHub gives the headings of a Markdown file."""
    seen: dict[str, int] = {}
    found: set[str] = set()
    for line in prose(path.read_text(encoding="utf-8")).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))  # a link shows its text
        text = text.replace("`", "").replace("*", "")
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(path: Path) -> list[str]:
    """The targets of the inline links of a Markdown file, outside code."""
    text = re.sub(r"`[^`\n]*`", "", prose(path.read_text(encoding="utf-8")))
    return re.findall(r"\]\(([^)\s]+)\)", text)


def broken_links(page: Path) -> list[str]:
    """What is wrong with each relative link of *page*, one line each."""
    problems = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        where, _, anchor = target.partition("#")
        dest = (page.parent / where).resolve() if where else page
        name = f"{page.relative_to(ROOT)}: ({target})"
        if not dest.is_relative_to(ROOT):
            problems.append(f"{name} leaves the repository")
        elif not dest.exists():
            problems.append(f"{name}: no such file")
        elif anchor and anchor not in anchors(dest):
            problems.append(f"{name}: no heading with the anchor #{anchor} in {dest.name}")
    return problems


def code_spans(text: str) -> str:
    """The code in *text*: its fenced blocks and its inline code spans, one per line."""
    blocks = [b.code for b in fenced_blocks(text)]
    return "\n".join(blocks + re.findall(r"`([^`\n]+)`", prose(text)))


def subcommands() -> set[str]:
    from pcr_explore.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(sub.choices)


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    phony = re.search(r"^\.PHONY:(.*)$", text, re.M)
    assert phony, "Makefile: no .PHONY line"
    return set(phony.group(1).split())


def notebooks() -> set[str]:
    return {p.stem for p in (ROOT / "notebooks").glob("*.ipynb")}


def test_every_readme_block_says_whether_the_tour_runs_it() -> None:
    blocks = fenced_blocks(README.read_text(encoding="utf-8"))
    unmarked = [b.line for b in blocks if b.marker is None]
    assert not unmarked, f"README.md: blocks without a tour marker at lines {unmarked}"
    keys = [b.marker.split()[1] for b in blocks if b.marker and b.marker != "run"]
    assert set(keys) <= set(NOT_RUN), f"README.md: skip keys without a reason: {keys}"
    assert set(NOT_RUN) <= set(keys), f"NOT_RUN keys no block uses: {set(NOT_RUN) - set(keys)}"
    run = [b for b in blocks if b.marker == "run"]
    assert run and all(b.lang in ("bash", "python") for b in run)


@pytest.mark.slow
def test_the_tour_runs_in_an_empty_folder(tmp_path: Path) -> None:
    pytest.importorskip("torch", reason="the tour trains at scan levels (make lab installs it)")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    for block in fenced_blocks(README.read_text(encoding="utf-8")):
        if block.marker != "run":
            continue
        if block.lang == "bash":
            argv, stdin = ["bash", "-e", "-o", "pipefail", "-c", block.code], None
        else:
            argv, stdin = [sys.executable, "-"], block.code
        done = subprocess.run(
            argv, cwd=tmp_path, env=env, input=stdin, capture_output=True, text=True, timeout=300
        )
        if done.returncode != 0:
            pytest.fail(
                f"README.md, the block at line {block.line} exited with {done.returncode}:\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
    data = tmp_path / "data"
    for made in ("photos.pcr/manifest.json", "train.pcr/manifest.json", "val.pcr/manifest.json"):
        assert (data / made).is_file(), made
    assert len(list((data / "level3").rglob("*.jpg"))) == 16
    for page in ("report.html", "budget.html", "scans.html"):
        assert (data / page).read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page: Path) -> None:
    assert broken_links(page) == []


def test_the_docs_index_lists_every_page() -> None:
    listed = {target.partition("#")[0] for target in links(DOCS / "README.md")}
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages - listed == set(), "docs/README.md does not list these pages"


def test_the_readme_names_real_commands_targets_and_notebooks() -> None:
    text = README.read_text(encoding="utf-8")
    code = code_spans(text)
    named = set(re.findall(r"pcr-explore ([a-z][\w-]*)", code))
    assert named and named <= subcommands(), named - subcommands()
    targets = set(re.findall(r"(?<![\w-])make ([a-z][\w-]*)", code))
    assert {"lab", "test"} <= targets <= make_targets(), targets - make_targets()
    assert set(re.findall(r"\b0\d_[a-z_]+[a-z]\b", text)) == notebooks()


def test_the_reference_covers_every_command_target_and_notebook() -> None:
    cli = anchors(DOCS / "CLI.md")
    assert {c for c in subcommands() if c not in cli} == set(), "docs/CLI.md lacks a heading"
    setup = code_spans((DOCS / "SETUP.md").read_text(encoding="utf-8"))
    assert make_targets() <= set(re.findall(r"make ([a-z][\w-]*)", setup))
    listed = set(re.findall(r"\b0\d_[a-z_]+[a-z]\b", (DOCS / "NOTEBOOKS.md").read_text("utf-8")))
    assert listed == notebooks()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_machine_specific_path_version_or_past_figure(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"\.\./shared|torch==\d", text), "a path or version of one machine"
    past = re.search(r"\bit was [\d.,]+\s*(ms|s|MB|GB|kB|x)\b", text)
    assert past is None, f"a figure of a past version: {past.group(0) if past else ''}"
