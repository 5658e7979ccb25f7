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


def test_the_benchmark_runs_and_renders_on_tiny_inputs() -> None:
    from matching import bench

    res = {
        "machine": bench.machine(),
        "suite": bench.suite_rows(1, 12, seconds=0.01),
        "scale": bench.scale_rows([50], repeat=1),
        "ged": bench.ged_rows([10], timeout=5.0),
    }
    assert res["suite"]["oracle_mislabelled"] == 0
    assert res["ged"][0]["ged_finished"] and res["ged"][0]["agree"] is not None
    text = bench.render(res)
    assert "cases/s" in text and "optimize_graph_edit_distance" in text
