"""Copy the front-end files the app serves from node_modules/ into static/vendor/.

Run after ``npm install`` (the Makefile's ``static`` target does both). The app never
loads scripts from a CDN: everything it needs is served from static/vendor/.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# (package, file inside the package, name under static/vendor/); a missing optional
# package is skipped, a missing required one is an error.
FILES = [
    ("htmx.org", "dist/htmx.min.js", "htmx.min.js", True),
    ("cytoscape", "dist/cytoscape.min.js", "cytoscape.min.js", False),
    # The run overlay (static/js/overlay.js): a layered layout for cytoscape.
    ("dagre", "dist/dagre.min.js", "dagre.min.js", False),
    ("cytoscape-dagre", "cytoscape-dagre.js", "cytoscape-dagre.js", False),
]


def main() -> int:
    modules = ROOT / "node_modules"
    target = ROOT / "static" / "vendor"
    target.mkdir(parents=True, exist_ok=True)
    for package, inside, name, required in FILES:
        src = modules / package / inside
        if not src.exists():
            if required:
                print(f"missing {src}: run `npm install` first", file=sys.stderr)
                return 1
            continue
        shutil.copyfile(src, target / name)
        print(f"static/vendor/{name} <- {package}/{inside}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
