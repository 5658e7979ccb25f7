"""Render the τ-bench airline development traces into ``fixtures/taubench/traces/``.

    PYTHONPATH=. .venv/bin/python scripts/build_taubench.py [--check]

The source is the shared data set ``shared/data/taubench-airline-dev/`` (found beside
the repository, ``../shared``, or beside any folder above it, so a git worktree finds it
too). Every entry of its ``results.json`` is rendered by the product's importer, exactly
as ``contracteval import results.json --select task_id=N,trial=T --write trace`` writes
it, to ``traces/task{N}-trial{T}.txt``; the data set's MIT ``LICENSE`` is copied beside
the fixtures' README.

The importer reads only an entry's ``traj`` (the agent's messages). Nothing here reads
``reward`` or ``info`` (the outcome check and the task's reference solution): they are
not procedure labels.

With ``--check`` nothing is written: the script exits 1, naming the files, when a
committed trace (or the licence) differs from what the importer renders today, is
missing, or has no entry in the results file.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from matching.importers import detect_kind, render  # noqa: E402

DATASET = Path("shared") / "data" / "taubench-airline-dev"
FIXTURES = ROOT / "fixtures" / "taubench"
TRACES = FIXTURES / "traces"


def data_dir(root: Path = ROOT) -> Path:
    """The shared data set: ``../shared`` of the repository, or of a folder above it."""
    for folder in root.resolve().parents:
        candidate = folder / DATASET
        if (candidate / "results.json").is_file():
            return candidate
    raise FileNotFoundError(f"no {DATASET} found beside {root} or any folder above it")


def trace_name(task_id: int, trial: int) -> str:
    return f"task{task_id}-trial{trial}.txt"


def render_all(source: Path) -> dict[str, str]:
    """File name → trace text, for every entry of ``results.json``, as the importer
    renders it (the CLI's ``load_trace`` does the same after parsing the file)."""
    data = json.loads((source / "results.json").read_text(encoding="utf-8"))
    kind = detect_kind(data)
    if kind != "tau_bench_results":
        raise ValueError(f"{source / 'results.json'} reads as {kind}, not a τ-bench results file")
    out: dict[str, str] = {}
    for entry in data:
        task_id, trial = entry["task_id"], entry["trial"]
        choice = {"task_id": str(task_id), "trial": str(trial)}
        out[trace_name(task_id, trial)] = render(kind, data, select=choice)
    return out


def expected_files(source: Path) -> dict[Path, bytes]:
    """Every file this script owns, with the bytes it should hold."""
    files = {TRACES / name: text.encode("utf-8") for name, text in render_all(source).items()}
    files[FIXTURES / "LICENSE"] = (source / "LICENSE").read_bytes()
    return files


def differences(files: dict[Path, bytes]) -> list[str]:
    """What differs between ``files`` and the committed fixtures (empty: identical)."""
    problems = []
    for path, content in sorted(files.items()):
        rel = path.relative_to(ROOT)
        if not path.is_file():
            problems.append(f"{rel}: missing")
        elif path.read_bytes() != content:
            problems.append(f"{rel}: differs from what the importer renders")
    stray = sorted(set(TRACES.glob("*.txt")) - set(files)) if TRACES.is_dir() else []
    problems += [f"{p.relative_to(ROOT)}: no such entry in results.json" for p in stray]
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a file is not current"
    )
    args = parser.parse_args(argv)
    source = data_dir()
    files = expected_files(source)
    if args.check:
        problems = differences(files)
        for line in problems:
            print(line, file=sys.stderr)
        print(f"{len(files)} files checked against {source}: {len(problems)} problem(s)")
        return 1 if problems else 0
    TRACES.mkdir(parents=True, exist_ok=True)
    for path, content in files.items():
        path.write_bytes(content)
    print(f"wrote {len(files)} files from {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
