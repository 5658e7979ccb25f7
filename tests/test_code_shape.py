"""The code stays in rooms a newcomer can read: no module over 500 lines and no function
over 60 lines in ``audit/`` or ``matching/`` (generated migrations aside)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("audit", "matching")
MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 60

# Files and functions that are still too long, as "path" or "path::function". This
# list must only shrink: split the code, then delete its entry here (a test below fails
# while an entry is no longer needed).
EXEMPT: frozenset[str] = frozenset({})


def _modules(package: str) -> list[Path]:
    return sorted(
        p
        for p in (ROOT / package).rglob("*.py")
        if "migrations" not in p.parts and "__pycache__" not in p.parts
    )


def _long_functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            length = (node.end_lineno or node.lineno) - start + 1
            if length > MAX_FUNCTION_LINES:
                out.append((node.name, length))
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_is_longer_than_500_lines(package):
    too_long = {
        str(p.relative_to(ROOT)): n
        for p in _modules(package)
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_FILE_LINES
    }
    assert {k: v for k, v in too_long.items() if k not in EXEMPT} == {}


@pytest.mark.parametrize("package", PACKAGES)
def test_no_function_is_longer_than_60_lines(package):
    too_long = {
        f"{p.relative_to(ROOT)}::{name}": n
        for p in _modules(package)
        for name, n in _long_functions(p)
    }
    assert {k: v for k, v in too_long.items() if k not in EXEMPT} == {}


def test_every_exemption_is_still_needed():
    """An entry whose file or function is short now must leave EXEMPT."""
    files = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for p in _modules(package)
    }
    functions = {
        f"{p.relative_to(ROOT)}::{name}"
        for package in PACKAGES
        for p in _modules(package)
        for name, _ in _long_functions(p)
    }
    stale = {
        e
        for e in EXEMPT
        if not (e in functions or ("::" not in e and files.get(e, 0) > MAX_FILE_LINES))
    }
    assert stale == set()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _private_imports(path: Path) -> list[str]:
    """``from x import _name`` of a project module, or ``module._name`` on a project
    module imported by name: what another module keeps private is not an interface."""
    out = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules: set[str] = set()  # names bound to project modules (or what may be one)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            ours = node.level > 0 or (node.module or "").split(".")[0] in PACKAGES
            if not ours:
                continue
            parts = (node.module or "").split(".")
            out += [
                f"{node.lineno}: from {node.module} import {a.name}"
                for a in node.names
                if _private(a.name)
            ]
            out += [f"{node.lineno}: from {node.module}" for p in parts if _private(p)][:1]
            modules |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in PACKAGES:
                    out += [
                        f"{node.lineno}: import {a.name}" for p in a.name.split(".") if _private(p)
                    ][:1]
                    modules.add(a.asname or a.name.split(".")[0])
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in modules:
                out.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return out


@pytest.mark.parametrize("package", PACKAGES)
def test_no_module_imports_another_modules_private_names(package):
    """Shared helpers have public names; a leading underscore means "this module only"."""
    found = {
        str(p.relative_to(ROOT)): hits for p in _modules(package) if (hits := _private_imports(p))
    }
    assert found == {}


def test_the_private_import_check_sees_one(tmp_path):
    assert _private_imports(ROOT / "matching" / "behaviour.py") == []
    sample = tmp_path / "sample.py"
    text = "from .extract import _sentences\nfrom . import extract\nextract._label('x')\n"
    sample.write_text(text, encoding="utf-8")
    assert _private_imports(sample) == ["1: from extract import _sentences", "3: extract._label"]
