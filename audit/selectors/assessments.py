"""How a project reads a semantic run's P(violation): the three-way assessment (clean,
needs review, violation) and its thresholds.

A project's thresholds are its own where it set them, else the shipped pair model's
(``matching.pair_model.load_model().thresholds``). The engine loads on first use, not
when the web app starts.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..models import Project

if TYPE_CHECKING:
    from matching.pair_model import Thresholds

logger = logging.getLogger(__name__)


def shipped_thresholds() -> Thresholds | None:
    """The shipped pair model's thresholds; None when the model cannot be read (the
    reason is logged: semantic runs fail with it too)."""
    from matching.pair_model import load_model

    try:
        return load_model().thresholds
    except (OSError, ValueError) as exc:
        logger.warning("the shipped pair model cannot be read: %s", exc)
        return None


def effective_thresholds(
    clean_below: float | None, violation_from: float | None
) -> Thresholds | None:
    """The thresholds with each value left unset taken from the shipped model (None when
    one is unset and the shipped model cannot be read)."""
    from matching.pair_model import Thresholds

    if clean_below is not None and violation_from is not None:
        return Thresholds(clean_below, violation_from)
    shipped = shipped_thresholds()
    if shipped is None:
        return None
    return Thresholds(
        shipped.clean_below if clean_below is None else clean_below,
        shipped.violation_from if violation_from is None else violation_from,
    )


def project_thresholds(project: Project) -> Thresholds | None:
    """The thresholds ``project``'s semantic runs are read with."""
    return effective_thresholds(project.review_clean_below, project.review_violation_from)


@dataclass(frozen=True)
class ThresholdsView:
    """What the project page shows of the thresholds: the project's values (None where
    it set none) and the shipped defaults (None when they cannot be read)."""

    clean_below: float | None
    violation_from: float | None
    shipped_clean_below: float | None
    shipped_violation_from: float | None


def thresholds_view(project: Project) -> ThresholdsView:
    shipped = shipped_thresholds()
    return ThresholdsView(
        project.review_clean_below,
        project.review_violation_from,
        shipped.clean_below if shipped else None,
        shipped.violation_from if shipped else None,
    )
