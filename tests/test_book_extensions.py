"""The book's Sphinx extensions: the PDF's one-line API summary, and each script once per HTML page."""

from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes
from sphinx import addnodes

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_latex"))

from dpsum_pdf import summarise_descriptions  # noqa: E402


def _desc(module, fullname, text, objtype="function", members=()):
    sig = addnodes.desc_signature("", "", ids=[f"{module}.{fullname}"],
                                  module=module, fullname=fullname)
    sig += addnodes.desc_name(text=fullname.split(".")[-1])
    content = addnodes.desc_content()
    content += nodes.paragraph("", "", *text)
    content += nodes.paragraph(text="Parameters and a long explanation follow.")
    content.extend(members)
    desc = addnodes.desc(objtype=objtype, domain="py")
    desc += sig
    desc += content
    return desc


def test_each_description_and_member_becomes_one_line_with_its_ids():
    method = _desc("dpsum.release", "Release.confidence_ball",
                   [nodes.Text("A ball that holds the sum. It names what it covers.")],
                   objtype="method")
    cls = _desc("dpsum.release", "Release", [nodes.Text("A release and its noise.")],
                objtype="class", members=[method])
    func = _desc("dpsum.mechanisms", "gaussian_mechanism",
                 [nodes.Text("Release "), nodes.literal(text="x"),
                  nodes.Text(" with noise of scale "), nodes.math(text=r"\sigma"),
                  nodes.Text(". Then more.")])
    section = nodes.section("", nodes.title(text="Release a sum"),
                            nodes.paragraph(text="Section text stays."), cls, func)
    section.insert(2, addnodes.index(entries=[]))     # index entries before an object
    assert summarise_descriptions(section) == 2
    assert not list(section.findall(addnodes.desc))
    assert len(list(section.findall(nodes.bullet_list))) == 1   # adjacent lines: one list
    lines = [item.astext() for item in section.findall(nodes.list_item)]
    assert lines == [
        "dpsum.release.Release \N{EM DASH} A release and its noise. "
        "Members: confidence_ball.",
        "dpsum.mechanisms.gaussian_mechanism \N{EM DASH} Release x with noise of scale "
        r"\sigma.",
    ]
    assert len(list(section.findall(addnodes.index))) == 1
    ids = [t["ids"] for t in section.findall(nodes.target)]
    assert ids == [["dpsum.release.Release"], ["dpsum.release.Release.confidence_ball"],
                   ["dpsum.mechanisms.gaussian_mechanism"]]
    assert section.astext().startswith("Release a sum")
    assert len(list(section.findall(nodes.math))) == 1   # inline nodes are kept


def test_a_tree_without_descriptions_is_unchanged():
    tree = nodes.section("", nodes.paragraph(text="No objects here."))
    before = tree.pformat()
    assert summarise_descriptions(tree) == 0
    assert tree.pformat() == before


def test_each_script_is_kept_once_in_order():
    from sphinx.builders.html._assets import _JavaScript

    from dpsum_html import unique_scripts
    thebe = 'const THEBE_JS_URL = "x"'
    scripts = [_JavaScript("_static/doctools.js", priority=200),
               _JavaScript("", body=thebe, priority=500),
               _JavaScript("_static/sphinx-thebe.js", priority=500),
               _JavaScript("", body=thebe, priority=800),
               _JavaScript("", body="let other = 1", priority=500),
               _JavaScript("_static/doctools.js", priority=800)]
    kept = unique_scripts(scripts)
    assert kept == [scripts[0], scripts[1], scripts[2], scripts[4]]


def test_a_signature_without_a_full_name_gives_its_text_on_one_line():
    sig = addnodes.desc_signature("", "", ids=[])
    sig += addnodes.desc_name(text="epsilon, delta")
    content = addnodes.desc_content()
    content += nodes.paragraph(text="The privacy guarantee.")
    desc = addnodes.desc(objtype="attribute", domain="py")
    desc += sig
    desc += content
    tree = nodes.section("", desc)
    assert summarise_descriptions(tree) == 1
    assert [i.astext() for i in tree.findall(nodes.list_item)] == [
        "epsilon, delta \N{EM DASH} The privacy guarantee."]
    assert not list(tree.findall(nodes.target))
