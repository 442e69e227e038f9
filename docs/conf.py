"""Sphinx configuration of the pytest-membudget docs (built with -W: warnings are errors)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_scripts"))

from pytest_membudget import __version__  # noqa: E402

project = "pytest-membudget"
author = "pytest-membudget developers"
copyright = "pytest-membudget developers"
release = __version__
version = __version__

extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build", "_scripts", "Thumbs.db", ".DS_Store"]
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
html_theme = "furo"
html_title = f"pytest-membudget {release}"
nitpicky = False

#: Pictures drawn on every build from the package's own fit and verdict code.
GENERATED = HERE / "_generated"


def _draw_pictures(app: Any) -> None:
    import verdict_plots

    verdict_plots.main(GENERATED)


def setup(app: Any) -> None:
    app.connect("builder-inited", _draw_pictures)
