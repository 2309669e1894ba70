"""The HTML book's pages: each script once.

Jupyter Book v1 loads ``sphinx_thebe`` and ``sphinx_togglebutton``, which
register inline scripts (``const THEBE_JS_URL = ...``, ``var
togglebuttonSelector = ...``) after the HTML builder has read its script
list; Sphinx then adds the extensions' registered scripts to the builder a
second time with another priority, so every page declared ``THEBE_JS_URL``
twice and the browser stopped the second script with "Identifier
'THEBE_JS_URL' has already been declared". This extension keeps the first
copy of each script (the same file, or the same inline code) in every page's
``script_files``; ``tests/offline_html.py`` fails on a page that includes a
script twice.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _key(script: Any) -> tuple[str, str]:
    attributes = getattr(script, "attributes", {}) or {}
    return str(getattr(script, "filename", script) or ""), str(attributes.get("body", ""))


def unique_scripts(scripts: list[Any]) -> list[Any]:
    """``scripts`` without repeats: the first of each (file, inline code), in order."""
    seen: set[tuple[str, str]] = set()
    out = []
    for script in scripts:
        key = _key(script)
        if key in seen and key != ("", ""):
            continue
        seen.add(key)
        out.append(script)
    return out


def _dedupe(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
            doctree: Any) -> None:
    if context.get("script_files"):
        context["script_files"] = unique_scripts(list(context["script_files"]))


def setup(app: Sphinx) -> dict[str, object]:
    # late, after the themes and extensions have added their scripts to the page
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
