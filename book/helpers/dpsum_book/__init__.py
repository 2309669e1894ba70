"""Code the chapters of the dpsum book share.

A second distribution next to the ``dpsum`` package (``book/helpers``,
installed in editable mode by ``make setup``): the book's plotting style,
alt text for figures, readers for ``book/data``, the experiments chapters
re-run, and the checks of the chapter conventions. ``dpsum`` never imports
it; it imports only ``dpsum``'s public names.
"""

from __future__ import annotations

from dpsum_book.alt import alt_line
from dpsum_book.style import figure, use_style

__all__ = ["alt_line", "figure", "use_style"]
