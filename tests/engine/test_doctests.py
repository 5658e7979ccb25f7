"""The docstring examples of every ``matching`` module run as tests (testpaths only
collects ``tests/``, so ``--doctest-modules`` would never see them)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import matching

MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(matching.__path__, prefix="matching.")
    if not m.name.endswith("__main__")
)


def test_every_engine_module_is_collected() -> None:
    for name in (
        "formats",
        "validate",
        "conditioning",
        "similarity",
        "match",
        "evaluate",
        "perturb",
        "synth",
        "bench",
    ):
        assert f"matching.{name}" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(
        module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, report=False
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples of {name} fail"
