"""Team work on existing pages: "my queue" and per-contract progress."""

from __future__ import annotations

from typing import Any

from django import template

from ..selectors import team as team_reads

register = template.Library()


@register.inclusion_tag("audit/team/_queue.html", takes_context=True)
def my_queue(context: dict[str, Any], project: Any = None) -> dict[str, Any]:
    """The signed-in user's assigned contracts (of ``project`` only, when given)."""
    user = context["request"].user
    return {"items": team_reads.my_queue(user, project), "request": context["request"]}


@register.simple_tag
def progress_of(contracts: list[Any]) -> dict[int, Any]:
    """Contract pk -> :class:`~audit.selectors.team.Progress` for a listing."""
    return team_reads.progress_by_contract(list(contracts))


@register.filter
def get_item(mapping: dict[Any, Any], key: Any) -> Any:
    return mapping.get(key)


@register.filter
def kappa_note(agreement: dict[str, Any] | None) -> str:
    """One line on a low κ beside a high raw agreement (the "κ paradox"), else ''."""
    if not agreement or agreement.get("kappa") is None or not agreement.get("nodes"):
        return ""
    nodes, kappa = agreement["nodes"], agreement["kappa"]
    agreed = nodes - agreement.get("disagreements", 0)
    if agreed / nodes < 0.7 or kappa >= 0.4:
        return ""
    return (
        f"The annotators agree on {agreed} of {nodes} nodes, yet κ is {kappa:.2f}: nearly"
        " every decision is the same category, so κ expects most agreement by chance and"
        " the few disagreements weigh heavily; read it with the disagreement count."
    )


@register.inclusion_tag("audit/team/_notifications.html", takes_context=True)
def my_notifications(context: dict[str, Any], project: Any = None) -> dict[str, Any]:
    """The signed-in user's unread notifications (of ``project`` only, when given)."""
    request = context["request"]
    return {"notes": team_reads.my_notifications(request.user, project), "request": request}
