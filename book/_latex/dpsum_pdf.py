"""Link the PDF of the book (``make pdf``) from the HTML book, once it exists.

``make pdf`` writes ``_build/latex/dpsum.pdf``. When the HTML book is built and
that file exists, this extension copies it next to the pages (``dpsum.pdf`` at
the root of the HTML output) and sets the template variable ``dpsum_pdf``,
which the sidebar template ``dpsum-pdf.html`` turns into a download link. When
it does not exist, the HTML book builds as before, without the link: ``make
book`` never needs TeX.
"""

from __future__ import annotations

from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config

PDF_NAME = "dpsum.pdf"


def _link_pdf(app: Sphinx, config: Config) -> None:
    # at config-inited, before the HTML builder hashes its settings, so that
    # pages built with or without the link are rewritten when that changes
    outdir = Path(app.outdir)
    pdf = outdir.parent / "latex" / PDF_NAME
    # not in the LaTeX build, whose output directory holds the PDF
    if pdf.is_file() and outdir not in pdf.parents:
        config.html_extra_path = [*config.html_extra_path, str(pdf)]
        config.html_context = {**config.html_context, "dpsum_pdf": PDF_NAME}


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("config-inited", _link_pdf)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
