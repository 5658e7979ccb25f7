"""The workspace's long repeated fragments (outline rows, highlighted pieces of text,
node-id options), built as strings in Python: at 1,000 nodes and 2,000 pieces the
template engine spent most of the page's time resolving variables for them. Every
value is escaped with :func:`django.utils.html.escape`; the partials of
``audit/workspace.html`` call these tags, so a page and an htmx answer carry the same
markup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from django import template
from django.template.defaultfilters import truncatechars, urlencode
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()
OOB = ' hx-swap-oob="true"'


def _outline_item(row, selected_pk: int | None, panel_base: str, oob: bool) -> str:
    n = row.node
    node_id, label, status = escape(n.node_id), escape(n.label), escape(n.review_status)
    kind = escape(n.type)
    depth = "d15" if row.depth > 15 else f"d{row.depth}"
    sel = " is-sel" if selected_pk == n.pk else ""
    return (
        f'<li id="ol-{n.pk}" class="ol-item t-{kind} s-{status} {depth}{sel}"'
        f' data-node="{node_id}" data-pk="{n.pk}" data-version="{n.version}"'
        f' data-type="{kind}" data-status="{status}"{OOB if oob else ""}>'
        f'<a href="?node={escape(urlencode(n.node_id))}" title="{label}"'
        f' hx-get="{escape(panel_base)}{n.pk}/" hx-swap="outerHTML" data-node="{node_id}">'
        '<span class="dot" aria-hidden="true"></span>'
        f'<span class="ol-label">{label}</span><span class="ol-status">{status}</span>'
        "</a></li>\n"
    )


@register.simple_tag
def outline_items(rows: Iterable, selected=None, panel_base: str = "", oob=False) -> SafeString:
    """The ``<li>`` of each outline row (``oob``: each swapped in by id)."""
    pk = selected.pk if selected else None
    return mark_safe("".join(_outline_item(r, pk, panel_base, bool(oob)) for r in rows))


def _segment(s, oob: bool) -> str:
    swap = OOB if oob else ""
    if s.css:
        return (
            f'<span id="s{s.start}" data-s="{s.start}" class="{escape(s.css)}"'
            f' data-n="{escape(s.nodes)}" data-p="{escape(s.primary)}"'
            f' tabindex="0" role="button"{swap}>'
            f"{escape(s.text)}</span>"
        )
    return f'<span id="s{s.start}" data-s="{s.start}"{swap}>{escape(s.text)}</span>'


@register.simple_tag
def segment_spans(segments: Iterable, oob=False) -> SafeString:
    """The ``<span>`` of each piece of the artifact (``oob``: each swapped in by id)."""
    return mark_safe("".join(_segment(s, bool(oob)) for s in segments))


@register.simple_tag
def node_id_options(rows: Iterable) -> SafeString:
    """An ``<option>`` per outline row: the node id, and its label cut to 80 characters."""
    return mark_safe(
        "".join(
            f'<option value="{escape(r.node.node_id)}">'
            f"{escape(truncatechars(r.node.label, 80))}</option>"
            for r in rows
        )
    )


@register.simple_tag
def bulk_left(counts: Mapping[str, int], moved: str = "proposed") -> str:
    """What a bulk decision on the whole outline leaves alone, e.g. "2 rejected left as
    they are" (``workspace.js`` writes the same for the outline as filtered)."""
    left = ", ".join(f"{n} {status}" for status, n in counts.items() if status != moved and n)
    return f"{left} left as they are" if left else ""
