"""Cold start: how long ``manage.py check`` takes, beside the floor Django and DRF set.

Runs, one after the other so that all three see the same load:

- ``app``: this project's ``manage.py check`` (settings, the app registry, the URLconf
  with every view, the API and the admin, the system checks);
- ``django``: a new ``django-admin startproject``, the least a Django process can do;
- ``django+drf``: the same project with DRF installed and one model viewset routed,
  the least a Django + DRF API can do (DRF imports its optional dependencies, psycopg
  among them, when they are installed).

Both floors are built in a temporary directory with the same interpreter, so they use
the same packages. Bytecode is written and one warm-up run of each is discarded, as a
deployed checkout would have it. Prints the minimum and median wall and CPU (user +
system) time of each; on a machine shared with other work, CPU time is the figure to
compare and the minimum is the least disturbed.

    python bench/cold_start.py --runs 15 [--doc]

``--doc`` writes ``docs/benchmarks-cold-start.md`` (``make bench-cold-start``).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import doc  # noqa: E402

TARGET_S = 0.8  # the app's median wall time
METHOD = """
``manage.py check`` of this project (settings, the app registry, the URLconf with every
view, the API and the admin, the system checks), interleaved with two floors built with
the same interpreter and packages: a new ``django-admin startproject`` and the same
project with DRF and one routed model viewset. Bytecode is written and one warm-up run
of each is discarded, as a deployed checkout would have it. On a shared machine CPU time
is the figure to compare, and the minimum is the least disturbed run.
"""

DRF_URLS = """
from django.contrib.auth.models import User
from django.urls import include, path
from rest_framework import routers, serializers, viewsets


class UserSerializer(serializers.ModelSerializer):
    class Meta:
        model = User
        fields = ["id", "username"]


class UserViewSet(viewsets.ModelViewSet):
    queryset = User.objects.all()
    serializer_class = UserSerializer


router = routers.DefaultRouter()
router.register("users", UserViewSet)
urlpatterns = [path("api/", include(router.urls))]
"""


def _floor_projects(tmp: Path) -> dict[str, Path]:
    admin = [sys.executable, "-m", "django", "startproject"]
    for name in ("floor", "floor_drf"):
        (tmp / name).mkdir()
        subprocess.run([*admin, name, str(tmp / name)], check=True)
    settings = tmp / "floor_drf" / "floor_drf" / "settings.py"
    text = settings.read_text()
    settings.write_text(
        text.replace(
            '"django.contrib.staticfiles",', '"django.contrib.staticfiles",\n    "rest_framework",'
        )
    )
    (tmp / "floor_drf" / "floor_drf" / "urls.py").write_text(DRF_URLS)
    return {"django": tmp / "floor", "django+drf": tmp / "floor_drf"}


def _check(directory: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one ``manage.py check`` in ``directory``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=directory,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each (default 10)")
    parser.add_argument("--doc", action="store_true", help="write docs/benchmarks-cold-start.md")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    with tempfile.TemporaryDirectory() as tmp:
        targets = {"app": ROOT, **_floor_projects(Path(tmp))}
        for directory in targets.values():  # writes bytecode; not counted
            _check(directory, env)
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in targets}
        for _ in range(args.runs):
            for name, directory in targets.items():
                times[name].append(_check(directory, env))
    rows = []
    for name, runs in times.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        rows.append(
            [
                name,
                f"{min(walls):.2f} s",
                f"{statistics.median(walls):.2f} s",
                f"{min(cpus):.2f} s",
                f"{statistics.median(cpus):.2f} s",
            ]
        )
    app = statistics.median(w for w, _ in times["app"])
    verdict = "met" if app <= TARGET_S else "not met"
    lines = doc.table(["project", "wall min", "wall median", "CPU min", "CPU median"], rows)
    lines += ["", f"Target: the app's median wall time ≤ {TARGET_S} s: {verdict}."]
    print("\n".join(lines))
    if args.doc:
        doc.write(
            "cold-start",
            title="cold start (`manage.py check`)",
            command=f"make bench-cold-start (bench/cold_start.py --runs {args.runs} --doc)",
            method=METHOD,
            machine_line=doc.machine(load=load),
            body=[f"{args.runs} runs of each, interleaved.", "", *lines],
        )


if __name__ == "__main__":
    main()
