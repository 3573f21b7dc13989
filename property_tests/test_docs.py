"""The project's documents live in the repository, and every citation of one resolves.

* No tracked file cites a document outside the repository (the design notes the project started
  from, ``../shared/...``): the contract is ``docs/design.md``, the architecture note
  ``docs/architecture.md``.
* Every repository path of a Markdown document that a tracked file names (``docs/...md``,
  ``paper_repro/...md``, ...) exists, and every relative link of a Markdown page resolves.
* Every ``docs/NAME.md §N`` (or ``§N.M``, ``§1 and §2``) citation names a numbered section that the
  page has, and section numbers are not used twice in one page.
* Every page under ``docs/`` is in the MkDocs navigation (``mkdocs.yml``).
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
TEXT_SUFFIXES = {".py", ".md", ".v", ".toml", ".yml", ".yaml", ".sh", ".txt", ".cfg", ".ini"}
# top-level folders whose Markdown documents are cited by repository path
TRACKED_TOPS = (
    "docs",
    "theory",
    "simulate",
    "engine",
    "figures",
    "paper_repro",
    "property_tests",
    "exitlaw",
)

# a document outside the repository: the shared design notes the project was started from
OUTSIDE = re.compile(r"\.\./shared\b|(?<![\w/])shared/\w|\bDESIGN\b|\bCONVENTIONS\.md")
DOC_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TRACKED_TOPS) + r")/[\w./-]*\w\.md)\b")
# ``docs/design.md §1.3``, ``docs/architecture.md §1 and §2``, ``docs/design.md §1.2, §1.3``
CITATION = re.compile(
    r"(docs/[\w./-]*\w\.md)\s+(§\d+(?:\.\d+)*(?:(?:\s*,\s*|\s+and\s+|\s*-\s*)§\d+(?:\.\d+)*)*)"
)
SECTION_NUMBER = re.compile(r"§(\d+(?:\.\d+)*)")
NUMBERED_HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s+\S", re.M)
MD_LINK = re.compile(r"\]\(([^)\s]+)\)")


def tracked_files() -> list[Path]:
    """The repository's tracked text files (``git ls-files``; a walk of the tree without git)."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        paths = [ROOT / p for p in out.split("\0") if p]
    except (OSError, subprocess.SubprocessError):
        skip = {".venv", "runs", ".git", "site", "build", "dist", ".hypothesis", ".pytest_cache"}
        paths = [
            p for p in ROOT.rglob("*") if p.is_file() and not skip & set(p.relative_to(ROOT).parts)
        ]
    return [
        p
        for p in paths
        if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.relative_to(ROOT).parts[0] == ".ci")
    ]


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def _strip_code_blocks(markdown: str) -> str:
    return re.sub(r"^```.*?^```", "", markdown, flags=re.M | re.S)


def numbered_sections(page: Path) -> list[str]:
    """The section numbers of a page's numbered headings (``## 1. Parts`` -> ``1``, ``### 1.5 Oracle`` -> ``1.5``)."""
    return NUMBERED_HEADING.findall(_strip_code_blocks(_text(page)))


def outside_citations(files: list[Path], root: Path = ROOT) -> list[str]:
    return [
        f"{p.relative_to(root)}:{_text(p)[: m.start()].count(chr(10)) + 1}: {m.group(0)!r}"
        for p in files
        for m in OUTSIDE.finditer(_text(p))
    ]


def missing_documents(files: list[Path], root: Path = ROOT) -> list[str]:
    bad = []
    for p in files:
        text = _text(p)
        for m in DOC_PATH.finditer(text):
            if not (root / m.group(1)).is_file():
                bad.append(
                    f"{p.relative_to(root)} names {m.group(1)}, which is not in the repository"
                )
        if p.suffix == ".md":
            for m in MD_LINK.finditer(_strip_code_blocks(text)):
                target = m.group(1).split("#", 1)[0]
                if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target):
                    continue  # an anchor on the same page, or a URL
                if not (p.parent / target).exists():
                    bad.append(f"{p.relative_to(root)} links to {m.group(1)}, which does not exist")
    return bad


def broken_section_citations(files: list[Path], root: Path = ROOT) -> list[str]:
    bad = []
    sections: dict[str, set[str]] = {}
    for p in files:
        for m in CITATION.finditer(_text(p)):
            page = root / m.group(1)
            if not page.is_file():
                bad.append(f"{p.relative_to(root)} cites {m.group(1)}, which does not exist")
                continue
            have = sections.setdefault(m.group(1), set(numbered_sections(page)))
            for number in SECTION_NUMBER.findall(m.group(2)):
                if number not in have:
                    bad.append(
                        f"{p.relative_to(root)} cites {m.group(1)} §{number}: no such section"
                    )
    return bad


@pytest.fixture(scope="module")
def files() -> list[Path]:
    # this file names the patterns it looks for (and plants broken ones), so it is left out
    found = [p for p in tracked_files() if p != Path(__file__).resolve()]
    assert any(p.suffix == ".py" for p in found) and (ROOT / "README.md") in found
    return found


def test_no_file_cites_a_document_outside_the_repository(files):
    assert outside_citations(files) == []


def test_every_named_document_exists(files):
    assert missing_documents(files) == []


def test_every_section_citation_points_at_a_section(files):
    cited = [m for p in files for m in CITATION.finditer(_text(p))]
    assert {m.group(1) for m in cited} >= {"docs/design.md", "docs/architecture.md"}
    assert broken_section_citations(files) == []


def test_section_numbers_are_unique_per_page():
    for page in sorted(DOCS.rglob("*.md")):
        numbers = numbered_sections(page)
        assert len(numbers) == len(set(numbers)), f"{page.relative_to(ROOT)}: {numbers}"
    assert {"1", "1.2", "1.6", "1.12", "3"} <= set(numbered_sections(DOCS / "design.md"))


def test_every_docs_page_is_in_the_mkdocs_nav():
    config = _text(ROOT / "mkdocs.yml")
    nav = set(re.findall(r"^\s+-\s+(?:[^:\n]+:\s+)?([\w./-]+\.md)\s*$", config, re.M))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == nav, (
        f"not in the nav: {sorted(pages - nav)}; in the nav, no page: {sorted(nav - pages)}"
    )


def test_the_checks_catch_planted_mistakes(tmp_path):
    """Each check fails on a file that breaks it (so a passing run means something)."""
    design = "DESIGN"
    planted = {
        "outside.py": f'"""Exit law ({design}.md section 1)."""\n',
        "outside2.py": f"# rule from ../shared/{design}.md\n",
        "outside3.md": f"the table of {design}'s section 1\n",
        "missing.py": '"""See docs/nowhere.md §1."""\n',
        "section.py": '"""See docs/design.md §1.99 and docs/architecture.md §1 and §42."""\n',
        "link.md": "[gone](no/such/page.md#top) and [fine](https://example.org/x.md)\n",
    }
    for name, text in planted.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    fake = [tmp_path / name for name in planted]
    (tmp_path / "docs").mkdir()
    for page in ("design.md", "architecture.md"):
        (tmp_path / "docs" / page).write_text(_text(DOCS / page), encoding="utf-8")
    outside = outside_citations(fake, tmp_path)
    missing = missing_documents(fake, tmp_path)
    sections = broken_section_citations(fake, tmp_path)
    assert sorted({o.split(":")[0] for o in outside}) == [
        "outside.py",
        "outside2.py",
        "outside3.md",
    ]
    assert any("docs/nowhere.md" in m for m in missing)
    assert any("no/such/page.md" in m for m in missing)
    assert not any("example.org" in m for m in missing)
    assert sorted(re.findall(r"§[\d.]+(?=: no such section)", " ".join(sections))) == [
        "§1.99",
        "§42",
    ]
    assert any("docs/nowhere.md" in s for s in sections)


def test_the_api_reference_sees_every_part_at_its_dotted_place(tmp_path):
    """The MkDocs hook lays ``package-dir`` out as ``exitlaw/<part>`` for mkdocstrings."""
    pytest.importorskip("mkdocs")
    import importlib.util

    spec = importlib.util.spec_from_file_location("source_tree", DOCS / "hooks" / "source_tree.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    layout = hook.package_layout(ROOT)
    assert {"exitlaw", "exitlaw.theory", "exitlaw.simulate", "exitlaw.engine"} <= set(layout)
    tree = hook.link_tree(ROOT, tmp_path / "src")
    for name, folder in layout.items():
        init = tree.joinpath(*name.split("."), "__init__.py")
        assert init.resolve() == (folder / "__init__.py").resolve(), name
    assert (
        tree / "exitlaw" / "cli" / "__init__.py"
    ).resolve() == ROOT / "exitlaw" / "cli" / "__init__.py"
