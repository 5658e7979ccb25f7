"""Fixtures of the engine tests (helpers live in ``helpers.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from .helpers import refund_contract_doc, refund_observed_doc


@pytest.fixture
def contract_doc() -> dict[str, Any]:
    return refund_contract_doc()


@pytest.fixture
def observed_doc() -> dict[str, Any]:
    return refund_observed_doc()
