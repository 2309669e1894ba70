"""The book's PDF (``make pdf``): numbering like the HTML book, and its link.

Two small hooks.

LaTeX build: the LaTeX class numbers every chapter, so a front-matter page
would shift every chapter number by one against the numbers Sphinx prints in
cross-references ("Proposition 2.2.1"). After the build, the parts of
``_toc.yml`` without ``numbered: true`` get unnumbered chapters
(``secnumdepth`` -1); the part captioned "Appendices" starts LaTeX's
``\\appendix`` (chapters A, B, ...); numbered parts keep the class's numbering.

LaTeX build, the API page: the HTML book documents every public name in
full (signature, parameters, examples), which in print took a third of the
PDF. In the LaTeX build each object description of ``book/api`` becomes one
line: its dotted name, the first sentence of its documentation and, for a
class, the names of its members (:func:`summarise_descriptions`), in a
smaller type. The line keeps the targets of the object and of its members,
so every cross-reference from the chapters still lands on it; the page's
``{only} latex`` note points to the HTML book for the rest.

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

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.util import logging

PDF_NAME = "dpsum.pdf"
#: the page whose object descriptions the PDF summarises
API_DOC = "book/api"
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


def _first_sentence(paragraph: nodes.paragraph) -> list[nodes.Node]:
    """Copies of the inline nodes of ``paragraph`` up to its first full stop."""
    out: list[nodes.Node] = []
    for child in paragraph.children:
        if isinstance(child, nodes.Text):
            text = str(child)
            cut = re.search(r"\.(\s|$)", text)
            if cut:
                out.append(nodes.Text(text[:cut.start() + 1]))
                return out
        out.append(child.deepcopy())
    return out


def _name(desc: addnodes.desc) -> str:
    sigs = [c for c in desc.children if isinstance(c, addnodes.desc_signature)]
    for sig in sigs:
        module, full = sig.get("module"), sig.get("fullname")
        if full:
            return f"{module}.{full}" if module else full
    for sig in sigs:
        text = " ".join(sig.astext().split())
        if text:
            return text
    return str(desc.get("objtype", "object"))


def _member_name(desc: addnodes.desc) -> str:
    return _name(desc).rsplit(".", 1)[-1]


def summary_line(desc: addnodes.desc) -> nodes.list_item:
    """The one line of an object description ``desc``.

    The line holds a target with the ids of the object's signatures, its
    dotted name as literal text and the first sentence of its first
    paragraph; a class's members (methods, attributes) follow by name, each
    with its own target, so that a reference to a member lands on the line.
    """
    para = nodes.paragraph()
    ids = [i for sig in desc.children if isinstance(sig, addnodes.desc_signature)
           for i in sig["ids"]]
    if ids:
        para += nodes.target("", "", ids=ids)
    para += nodes.literal(text=_name(desc))
    content = next((c for c in desc.children if isinstance(c, addnodes.desc_content)), None)
    first = next((c for c in content.children if isinstance(c, nodes.paragraph)), None) \
        if content is not None else None
    if first is not None:
        para += nodes.Text(" \N{EM DASH} ")
        para.extend(_first_sentence(first))
    members = list(desc.findall(addnodes.desc, include_self=False))
    if members:
        para += nodes.Text(" Members: ")
        for k, member in enumerate(members):
            member_ids = [i for sig in member.children
                          if isinstance(sig, addnodes.desc_signature) for i in sig["ids"]]
            if k:
                para += nodes.Text(", ")
            if member_ids:
                para += nodes.target("", "", ids=member_ids)
            para += nodes.literal(text=_member_name(member))
        para += nodes.Text(".")
    return nodes.list_item("", para)


def _is_summary(node: nodes.Node) -> bool:
    return isinstance(node, nodes.bullet_list) and "dpsum-api-summary" in node["classes"]


def _merge_lists(parent: nodes.Element) -> None:
    """Join adjacent summary lists; an index entry before a line moves into it."""
    kids = list(parent.children)
    for i, kid in enumerate(kids):
        if _is_summary(kid):
            j = i - 1
            while j >= 0 and isinstance(kids[j], addnodes.index):
                parent.remove(kids[j])
                kid[0][0].insert(0, kids[j])
                j -= 1
    previous = None
    for kid in list(parent.children):
        if _is_summary(kid):
            if previous is None:
                previous = kid
            else:
                items = list(kid.children)
                parent.remove(kid)
                for item in items:
                    kid.remove(item)
                    previous += item
        else:
            previous = None


def summarise_descriptions(tree: nodes.Element) -> int:
    """Replace every outermost object description under ``tree`` by its line.

    Adjacent lines form one list. Returns the number of lines written.
    Module and section text stays.
    """
    outer = [d for d in tree.findall(addnodes.desc)
             if not any(isinstance(a, addnodes.desc) for a in _ancestors(d))]
    parents = []
    for desc in outer:
        parent = desc.parent
        desc.replace_self(nodes.bullet_list("", summary_line(desc), bullet="-",
                                            classes=["dpsum-api-summary"]))
        if parent not in parents:
            parents.append(parent)
    for parent in parents:
        _merge_lists(parent)
    return len(outer)


def _ancestors(node: nodes.Node):
    parent = node.parent
    while parent is not None:
        yield parent
        parent = parent.parent


def _summarise_api(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if app.builder.format != "latex":
        return
    for part in doctree.findall(addnodes.start_of_file):
        if part.get("docname") == API_DOC:
            lines = summarise_descriptions(part)
            # the summary in a smaller type, to the end of the page
            part.insert(0, nodes.raw("", "\\small\n", format="latex"))
            part += nodes.raw("", "\\normalsize\n", format="latex")
            _logger.info("dpsum_pdf: %s summarised in %d lines", API_DOC, lines)


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("config-inited", _link_pdf)
    app.connect("doctree-resolved", _summarise_api)
    app.connect("build-finished", _number_parts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
