"""The book's PDF (``make pdf``): numbering like the HTML book, and its link.

Two small hooks.

LaTeX build: the LaTeX class numbers every chapter, so a front-matter page
would shift every chapter number by one against the numbers Sphinx prints in
cross-references ("Proposition 2.2.1"). After the build, the parts of
``_toc.yml`` without ``numbered: true`` get unnumbered chapters
(``secnumdepth`` -1); the part captioned "Appendices" starts LaTeX's
``\\appendix`` (chapters A, B, ...); numbered parts keep the class's numbering.

HTML build: ``make pdf`` writes ``_build/latex/dpsum.pdf``. When the HTML book
is built and that file exists, it is copied next to the pages (``dpsum.pdf``
at the root of the HTML output) and the template variable ``dpsum_pdf`` is
set, which the sidebar template ``dpsum-pdf.html`` turns into a download
link. When it does not exist, the HTML book builds as before, without the
link: ``make book`` never needs TeX.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

PDF_NAME = "dpsum.pdf"
_PART = re.compile(r"^\\part\{.*\}\s*$", re.M)
_logger = logging.getLogger(__name__)


def _link_pdf(app: Sphinx, config: Config) -> None:
    # at config-inited, before the HTML builder hashes its settings, so that
    # pages built with or without the link are rewritten when that changes
    outdir = Path(app.outdir)
    pdf = outdir.parent / "latex" / PDF_NAME
    # not in the LaTeX build, whose output directory holds the PDF
    if pdf.is_file() and outdir not in pdf.parents:
        config.html_extra_path = [*config.html_extra_path, str(pdf)]
        config.html_context = {**config.html_context, "dpsum_pdf": PDF_NAME}


def number_parts(tex: str, parts: list[tuple[str, bool]]) -> str:
    """Insert the numbering of each part after its ``\\part{...}`` line.

    ``parts`` lists the captioned parts of the table of contents in order, as
    (caption, numbered). Returns ``tex`` unchanged when the number of
    ``\\part`` lines differs from the number of parts.
    """
    lines = list(_PART.finditer(tex))
    if len(lines) != len(parts):
        return tex
    out, last = [], 0
    for match, (caption, numbered) in zip(lines, parts):
        if caption.lower().startswith("appendi"):
            setting = "\\appendix\\setcounter{secnumdepth}{\\dpsumsecnumdepth}"
        elif numbered:
            setting = "\\setcounter{secnumdepth}{\\dpsumsecnumdepth}"
        else:
            setting = "\\setcounter{secnumdepth}{-1}"
        out += [tex[last:match.end()], "\n", setting, "%\n"]
        last = match.end()
    out.append(tex[last:])
    body = "".join(out)
    keep = "\\edef\\dpsumsecnumdepth{\\the\\value{secnumdepth}}%\n"
    return body.replace("\\begin{document}\n", "\\begin{document}\n" + keep, 1)


def _number_parts(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "latex":
        return
    site_map = getattr(app.config, "external_site_map", None)
    if site_map is None:
        return
    parts = [(t.caption, bool(t.numbered)) for t in site_map[site_map.root.docname].subtrees
             if t.caption]
    for _startdoc, target, *_ in app.config.latex_documents:
        path = Path(app.outdir) / target
        tex = path.read_text(encoding="utf-8")
        new = number_parts(tex, parts)
        if new == tex and parts:
            _logger.warning("dpsum_pdf: %s has not one \\part per captioned part of the "
                            "table of contents; numbering left as LaTeX's", target)
        path.write_text(new, encoding="utf-8")


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("config-inited", _link_pdf)
    app.connect("build-finished", _number_parts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
