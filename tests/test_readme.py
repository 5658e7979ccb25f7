"""The README stays true to the tree: every path it names exists, and its layout names
every module of the engine and the web app."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PATH = re.compile(
    r"`((?:matching|audit|tests|docs|fixtures|templates|static|scripts|deploy|contracteval_site)/[\w./-]*)`"
)
PACKAGES = ("matching", "audit")


def _layout() -> str:
    return README.split("## Layout", 1)[1].split("```", 2)[1]


def test_every_path_the_readme_names_exists():
    missing = sorted({p for p in PATH.findall(README) if not (ROOT / p.rstrip("/")).exists()})
    assert missing == []


def test_the_layout_names_every_module_and_subpackage():
    names = set(re.findall(r"[\w]+\.py|[\w]+/", _layout()))
    unlisted = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).iterdir()):
            if path.name.startswith(("_", ".")) or path.suffix not in (".py", ""):
                continue
            name = path.name + ("/" if path.is_dir() else "")
            if name not in names:
                unlisted.append(f"{package}/{name}")
            if path.is_dir() and name not in (
                "migrations/",
                "schemas/",
                "data/",
                "management/",
                "templatetags/",
            ):
                unlisted += [
                    f"{package}/{name}{m.name}"
                    for m in sorted(path.glob("*.py"))
                    if not m.name.startswith("_") and m.name not in names
                ]
    assert unlisted == []


LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_of_the_readme_and_docs_names_a_file_that_exists():
    """Images and pages the docs link to exist (a link's #anchor is not checked)."""
    missing = []
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            path = target.split("#", 1)[0]
            if not path or "://" in path or path.startswith("mailto:"):
                continue
            if not (doc.parent / path).exists():
                missing.append(f"{doc.relative_to(ROOT)}: {target}")
    assert missing == []
