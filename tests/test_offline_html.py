"""The offline check of the built book catches pages that load from the network."""

from __future__ import annotations

import pytest

from offline_html import (check_tree, duplicate_scripts_in_html, is_remote, main,
                          remote_loads_in_css, remote_loads_in_html)

LOCAL_PAGE = """<!DOCTYPE html><html><head>
<script src="_static/mathjax/tex-chtml.js"></script>
<script src="../_static/doctools.js?v=1"></script>
<link rel="stylesheet" href="_static/styles/theme.css" />
<link rel="preload" as="script" href="_static/scripts/bootstrap.js" />
<script>window.MathJax = {"tex": {"macros": {}}}</script>
</head><body><a href="https://example.org/paper">a link is not a load</a>
<img src="data:image/png;base64,AAAA" /></body></html>"""


def test_a_page_that_loads_only_local_files_passes(tmp_path):
    assert remote_loads_in_html(LOCAL_PAGE) == []
    (tmp_path / "index.html").write_text(LOCAL_PAGE)
    assert check_tree(tmp_path) == {}
    assert main(["offline_html.py", str(tmp_path)]) == 0


@pytest.mark.parametrize("tag, url", [
    ('<script src="{}"></script>', "https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-mml-chtml.js"),
    ('<script defer src="{}"></script>', "http://example.org/a.js"),
    ('<script src="{}"></script>', "//cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js"),
    ('<link rel="stylesheet" href="{}">', "https://fonts.googleapis.com/css?family=Lato"),
    ('<link href="{}" rel="preload" as="style">', "HTTPS://example.org/x.css"),
    ('<style>@import url("{}");</style>', "https://fonts.googleapis.com/css2"),
    ('<div style="background: url({})"></div>', "https://example.org/bg.png"),
])
def test_a_page_that_loads_from_the_network_fails(tmp_path, tag, url):
    page = LOCAL_PAGE.replace("</head>", tag.format(url) + "</head>")
    assert remote_loads_in_html(page) == [url]
    sub = tmp_path / "book"
    sub.mkdir()
    (sub / "chapter.html").write_text(page)
    (tmp_path / "index.html").write_text(LOCAL_PAGE)
    assert check_tree(tmp_path) == {"book/chapter.html": [url]}
    assert main(["offline_html.py", str(tmp_path)]) == 1


def test_a_stylesheet_that_imports_from_the_network_fails(tmp_path):
    css = '@import url("https://fonts.googleapis.com/css2?family=Inter");\n' \
          '@font-face { src: url(../fonts/local.woff2) }\n'
    assert remote_loads_in_css(css) == ["https://fonts.googleapis.com/css2?family=Inter"]
    (tmp_path / "index.html").write_text(LOCAL_PAGE)
    (tmp_path / "theme.css").write_text(css)
    assert list(check_tree(tmp_path)) == ["theme.css"]


def test_schemes():
    assert is_remote("https://x.org/a.js") and is_remote("//x.org/a.js") and is_remote("ftp://x")
    assert not is_remote("_static/a.js") and not is_remote("../a.js") and not is_remote("/abs/a.js")
    assert not is_remote("data:text/css,") and not is_remote("file:///tmp/a.js")


def test_an_empty_or_missing_build_fails(tmp_path):
    assert main(["offline_html.py", str(tmp_path)]) == 1
    with pytest.raises(ValueError, match="root"):
        check_tree(tmp_path / "missing")


THEBE = '<script>const THEBE_JS_URL = "https://unpkg.com/thebe@0.8.2/lib/index.js"</script>'


@pytest.mark.parametrize("script", [THEBE, '<script src="_static/copybutton.js"></script>'])
def test_a_script_included_twice_fails(tmp_path, script):
    page = LOCAL_PAGE.replace("</head>", script + "\n" + script + "</head>")
    assert remote_loads_in_html(page) == []
    assert len(duplicate_scripts_in_html(page)) == 1
    assert duplicate_scripts_in_html(page.replace(script, "", 1)) == []
    (tmp_path / "page.html").write_text(page)
    assert list(check_tree(tmp_path)) == ["page.html"]
    assert main(["offline_html.py", str(tmp_path)]) == 1


def test_distinct_inline_scripts_and_configs_pass():
    page = LOCAL_PAGE.replace("</head>", "<script>let a = 1;</script><script>let b = 2;</script>"
                              '<script type="text/x-thebe-config">{}</script>'
                              '<script type="text/x-thebe-config">{}</script></head>')
    assert duplicate_scripts_in_html(page) == []
