"""Every document the repository cites is in the repository.

Scans every text file of the repository (code, tests, workflows, configs, deploy, the
docs themselves) for citations of Markdown documents (``NAME.md``, ``path/NAME.md``):

- a path must name a file of the repository (relative to the citing file's folder or
  to the repository root); ``$BNSL_SHARED_DATA/...`` names the staged data, not the
  repository, and is left alone;
- a bare name must be a file of the repository, and one of ``docs/`` is cited as
  ``docs/NAME.md`` outside ``docs/`` (a reader of ``bnsl_dist/cache/jkl.py`` must find it);
- ``docs/ALGORITHMS.md §N`` (and ``§N and §M``, ``§N–§M``) must be a section
  ``## N.`` of that file; ``docs/NAME.md "Heading"`` must be one of its headings.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
#: Folders that hold no cited text (VCS, caches, build outputs).
SKIP_DIRS = {".git", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache",
             ".hypothesis", ".benchmarks", "build", "dist", ".venv", "node_modules"}
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".sh", ".cfg", ".ini",
                 ".json", ".sbatch", ".rst", ""}
MAX_BYTES = 2_000_000

CITATION = re.compile(r"(?<![\w$/.-])((?:\$BNSL_SHARED_DATA/)?(?:[\w.-]+/)*[A-Z][A-Z0-9_-]*\.md)\b")
SECTIONS = re.compile(r"\A(?:\s*(?:,|;|and|or|&|–|-)?\s*§\s*(\d+))+")
HEADING = re.compile(r'\A\s+"([^"\n]+)"')


def _text_files() -> list[Path]:
    out = []
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(part in SKIP_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if not path.is_file() or path.suffix not in TEXT_SUFFIXES:
            continue
        if path.stat().st_size > MAX_BYTES:
            continue
        out.append(path)
    return out


def _algorithm_sections() -> set[int]:
    text = (DOCS / "ALGORITHMS.md").read_text(encoding="utf-8")
    return {int(m) for m in re.findall(r"^## (\d+)\. ", text, flags=re.M)}


def _headings(doc: Path) -> set[str]:
    return {m.strip() for m in re.findall(r"^#+ (.+)$", doc.read_text(encoding="utf-8"),
                                          flags=re.M)}


def _names_outside_docs() -> set[str]:
    return {p.name for p in _text_files() if p.suffix == ".md" and DOCS not in p.parents}


def citation_problems(path: Path, text: str, names_outside_docs: set[str],
                      sections: set[int]) -> list[str]:
    """What is wrong with the Markdown citations of ``text`` (the file ``path``)."""
    out = []
    in_docs = DOCS in path.parents
    for m in CITATION.finditer(text):
        cited = m.group(1)
        line = text.count("\n", 0, m.start()) + 1
        where = f"{path.relative_to(ROOT)}:{line}: {cited}"
        if cited.startswith("$BNSL_SHARED_DATA/"):
            continue
        if "/" in cited:
            target = next((base / cited for base in (path.parent, ROOT)
                           if (base / cited).is_file()), None)
            if target is None:
                out.append(f"{where}: no such file in the repository")
                continue
        else:
            target = path.parent / cited if (path.parent / cited).is_file() else None
            if target is None and cited not in names_outside_docs:
                if (DOCS / cited).is_file() and not in_docs:
                    out.append(f"{where}: cite it as docs/{cited}")
                    continue
                if not (DOCS / cited).is_file():
                    out.append(f"{where}: no such document in the repository")
                    continue
                target = DOCS / cited
        if target is None:
            continue
        rest = text[m.end():m.end() + 120]
        if target.resolve() == (DOCS / "ALGORITHMS.md").resolve():
            chain = SECTIONS.match(rest)
            if chain:
                for n in re.findall(r"§\s*(\d+)", chain.group(0)):
                    if int(n) not in sections:
                        out.append(f"{where} §{n}: docs/ALGORITHMS.md has no section {n}")
        heading = HEADING.match(rest)
        if heading and DOCS in target.resolve().parents:
            if heading.group(1) not in _headings(target):
                out.append(f'{where} "{heading.group(1)}": no such heading')
    return out


def test_docs_exist():
    for name in ("ARCHITECTURE.md", "ALGORITHMS.md", "RECORDS.md", "CONVENTIONS.md"):
        assert (DOCS / name).is_file(), name


def test_algorithms_sections_are_numbered_in_order():
    text = (DOCS / "ALGORITHMS.md").read_text(encoding="utf-8")
    numbers = [int(m) for m in re.findall(r"^## (\d+)\. ", text, flags=re.M)]
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    assert len(numbers) >= 11


def test_every_cited_document_exists():
    names = _names_outside_docs()
    sections = _algorithm_sections()
    problems = []
    for path in _text_files():
        if path == Path(__file__).resolve():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        problems += citation_problems(path, text, names, sections)
    assert not problems, "\n".join(problems)


def test_readme_links_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/ARCHITECTURE.md" in readme and "docs/ALGORITHMS.md" in readme


@pytest.mark.parametrize("text,bad", [
    ("see docs/ALGORITHMS.md §3 for BIC*", False),
    ("docs/ALGORITHMS.md §2 and §8", False),
    ("docs/ALGORITHMS.md §2 and §99", True),
    ("docs/ALGORITHMS.md\n§4; the paper", False),
    ("docs/ALGORITHMS.md §12", True),
    ("(ALGORITHMS.md §3)", True),                 # bare name of a doc, outside docs/
    ("STYLE" + ".md §4", True),                   # a document the repository lacks
    ("docs/NOTES" + ".md", True),
    ('docs/ARCHITECTURE.md "Distribution (Dask)"', False),
    ('docs/ARCHITECTURE.md "Distribution"', True),
    ("$BNSL_SHARED_DATA/README.md §5b", False),  # the staged data, not the repository
    ("deploy/README.md", False),
    ("the README.md of each folder", False),
])
def test_the_rules_catch_what_they_should(text, bad):
    path = ROOT / "bnsl_dist" / "example.py"
    got = citation_problems(path, text, _names_outside_docs(), _algorithm_sections())
    assert bool(got) == bad, (text, got)
