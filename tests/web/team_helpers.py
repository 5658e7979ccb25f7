"""Helpers of the team annotation tests (the ``team`` fixture is in conftest)."""

from __future__ import annotations


def decide_all(contract, user, overrides=None):
    """``user`` confirms every node of ``contract`` except those in ``overrides``."""
    from audit import services

    overrides = overrides or {}
    for node in contract.nodes.all():
        action, fields = overrides.get(node.node_id, ("confirm", None))
        services.decision_record(node=node, user=user, action=action, fields=fields)
