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
    # The API docs page (/api/docs/): Swagger UI served from here, never from a CDN.
    ("swagger-ui-dist", "swagger-ui-bundle.js", "swagger-ui/swagger-ui-bundle.js", True),
    (
        "swagger-ui-dist",
        "swagger-ui-standalone-preset.js",
        "swagger-ui/swagger-ui-standalone-preset.js",
        True,
    ),
    ("swagger-ui-dist", "swagger-ui.css", "swagger-ui/swagger-ui.css", True),
    ("swagger-ui-dist", "favicon-32x32.png", "swagger-ui/favicon-32x32.png", True),
    # Accessibility checks of the browser tests (never served by a page of the app).
    # Required: package.json lists it, and those tests fail (not skip) without it.
    ("axe-core", "axe.min.js", "axe.min.js", True),
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
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target / name)
        print(f"static/vendor/{name} <- {package}/{inside}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
