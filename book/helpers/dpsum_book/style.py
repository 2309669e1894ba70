"""The book's one matplotlib style.

Every chapter that plots starts with::

    from dpsum_book import use_style
    use_style()

and draws its figures with :func:`figure`, which has fixed sizes: the width
of the text column (6.8 inches at 100 dpi, within the 700 px column, so that a figure is shown
at its own size and its fonts stay at least 9 pt) and at most three panels
in a row. Colours come from the Okabe-Ito palette, which readers with any
common form of colour blindness can tell apart, paired with line styles so
that the lines differ in print too.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler
from matplotlib.figure import Figure

__all__ = ["DPI", "FONT_PT", "MAX_WIDTH_PX", "OKABE_ITO", "RC", "WIDTH_IN", "figure",
           "figure_size", "use_style"]

#: dots per inch of the stored figures
DPI = 100
#: the text column, 700 px: a figure at most this wide is shown at its own size
MAX_WIDTH_PX = 700
#: the width of a full-width figure, a margin less than the column (tight
#: bounding boxes grow a figure by a few pixels)
WIDTH_IN = 6.8
#: the smallest font of a figure (tick labels, legends), in points
FONT_PT = 9.0

#: Okabe and Ito's colour-blind-safe palette (black first for the main line)
OKABE_ITO = ("#000000", "#E69F00", "#56B4E9", "#009E73", "#0072B2", "#D55E00",
             "#CC79A7", "#F0E442")
_DASHES = ("-", "--", "-.", ":", "-", "--", "-.", ":")

#: the rcParams :func:`use_style` sets
RC: dict[str, Any] = {
    "figure.dpi": DPI,
    "savefig.dpi": DPI,
    "figure.figsize": (WIDTH_IN * 0.8, 3.6),
    "figure.constrained_layout.use": True,
    "font.size": 10.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 10.0,
    "xtick.labelsize": FONT_PT,
    "ytick.labelsize": FONT_PT,
    "legend.fontsize": FONT_PT,
    "legend.title_fontsize": FONT_PT,
    "figure.titlesize": 11.0,
    "axes.prop_cycle": cycler(color=list(OKABE_ITO)) + cycler(linestyle=list(_DASHES)),
    "image.cmap": "cividis",
    "axes.grid": True,
    "grid.alpha": 0.3,
    "lines.linewidth": 1.6,
    "lines.markersize": 5.0,
}

_ROW_HEIGHT = {1: 3.6, 2: 3.0, 3: 2.6}


def use_style() -> None:
    """Set the book's matplotlib style (fonts, palette, sizes) for this session."""
    mpl.style.use(RC)


def figure_size(ncols: int = 1, nrows: int = 1) -> tuple[float, float]:
    """The fixed size, in inches, of a figure of ``nrows`` rows of ``ncols`` panels.

    Parameters
    ----------
    ncols : int
        Panels in a row, 1 to 3.
    nrows : int
        Rows of panels, 1 to 3.

    Returns
    -------
    tuple of float
        ``(width, height)``: one panel is 80% of the column wide, two or three
        panels fill it.
    """
    for name, value in (("ncols", ncols), ("nrows", nrows)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
        if not 1 <= value <= 3:
            raise ValueError(f"{name} must be 1, 2 or 3 (at most three panels in a row "
                             f"or column stay legible), got {value}")
    width = WIDTH_IN * (0.8 if ncols == 1 else 1.0)
    return width, _ROW_HEIGHT[int(ncols)] * int(nrows)


def figure(ncols: int = 1, nrows: int = 1, **subplots: Any) -> tuple[Figure, Any]:
    """A new figure in the book's fixed size, and its axes.

    Parameters
    ----------
    ncols, nrows : int
        Panels in a row and rows, each 1 to 3 (see :func:`figure_size`).
    **subplots
        Passed to :func:`matplotlib.pyplot.subplots` (``sharey=True``, ...);
        ``figsize`` is not accepted: the sizes are the book's.

    Returns
    -------
    fig : matplotlib.figure.Figure
    axes : Axes or array of Axes
        As :func:`matplotlib.pyplot.subplots` returns them.
    """
    if "figsize" in subplots:
        raise TypeError("figure() takes no figsize: the book's figures have fixed sizes")
    use_style()
    return plt.subplots(nrows, ncols, figsize=figure_size(ncols, nrows), **subplots)
