"""Small wording filters shared by the templates (``{% load audit_text %}``)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django import template
from django.utils import timezone
from django.utils.safestring import SafeString, mark_safe
from django.utils.timesince import timesince

register = template.Library()


@register.filter
def ago(value: datetime | None) -> str:
    """``"just now"`` under a minute (timesince alone says "0 minutes"), else "3 hours ago"."""
    if not value:
        return ""
    if timezone.now() - value < timedelta(minutes=1):
        return "just now"
    return f"{timesince(value)} ago"


@register.filter
def get_item(mapping: dict, key: str):
    """``mapping[key]`` in a template (None when absent)."""
    return mapping.get(key) if hasattr(mapping, "get") else None


@register.filter
def text_content(value: str) -> SafeString:
    """``value`` escaped for the content of an element (never an attribute): only
    ``&``, ``<`` and ``>``. A trace is mostly JSON, and the quotes that ``escape``
    turns into six characters each would make its page several times its size. A
    carriage return becomes a character reference, which the HTML parser keeps (a
    literal one it turns into a line feed, shifting the offsets of a trace's spans)."""
    # str.replace, not str.translate: thirty times faster on a trace of half a megabyte
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if "\r" in text:
        text = text.replace("\r", "&#13;")
    return mark_safe(text)  # & < > escaped above: nothing in it can open a tag


@register.filter
def pct(value: float | None) -> str:
    """A rate as a whole percent (``—`` without one)."""
    return "—" if value is None else f"{100 * value:.0f}%"


@register.filter
def pp(value: float | None) -> str:
    """A difference of two rates in signed percentage points (``—`` without one)."""
    return "—" if value is None else f"{100 * value:+.0f} pp"
