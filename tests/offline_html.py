"""Check that a built HTML book loads no script or stylesheet from the network.

Usage: ``python tests/offline_html.py _build/html`` (run by ``make test`` and
``make book`` after the build). Exits with status 1 and lists every offending
page and address if any page, or any stylesheet shipped with the book, loads a
script, stylesheet or font from another host, or if a page includes the same
script twice (an inline script declared twice stops with "Identifier ... has
already been declared"); exits 0 otherwise.

A reference counts as remote when it has a scheme other than ``file:`` or
``data:`` (``https://...``, ``http://...``) or is protocol-relative
(``//cdn.example/...``). Links a reader may click (``<a href>``) are not loads
and are not checked.
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

_REMOTE = re.compile(r"^\s*(//|[a-zA-Z][a-zA-Z0-9+.-]*:)")
_LOCAL_SCHEMES = ("file:", "data:", "blob:")
# rel values under which <link href> makes the browser fetch the resource
_LOADING_RELS = {"stylesheet", "preload", "modulepreload", "prefetch", "icon"}
_CSS_URL = re.compile(r"""(?:@import\s+(?:url\()?|url\()\s*["']?([^"')\s;]+)""")


def is_remote(url: str) -> bool:
    """True when loading ``url`` would reach the network."""
    url = url.strip()
    if not _REMOTE.match(url):
        return False
    return not url.lower().startswith(_LOCAL_SCHEMES)


class _Loads(HTMLParser):
    """Collect the addresses a page loads as scripts, stylesheets or styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.loads: list[str] = []
        self.scripts: list[str] = []
        self._in_style = False
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = {k: (v or "") for k, v in attrs}
        if tag == "script" and a.get("src"):
            self.loads.append(a["src"])
            self.scripts.append("src=" + a["src"])
        elif tag == "script" and a.get("type", "text/javascript") in ("text/javascript", "module"):
            self._in_script = True
            self.scripts.append("")
        elif tag == "link" and a.get("href"):
            rels = set(a.get("rel", "").lower().split())
            if rels & _LOADING_RELS:
                self.loads.append(a["href"])
        elif tag == "style":
            self._in_style = True
        if a.get("style"):
            self.loads.extend(_CSS_URL.findall(a["style"]))

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        elif tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data
        if self._in_style:
            self.loads.extend(_CSS_URL.findall(data))


def remote_loads_in_html(text: str) -> list[str]:
    """The remote addresses an HTML page loads as script, stylesheet or style."""
    parser = _Loads()
    parser.feed(text)
    parser.close()
    return [u for u in parser.loads if is_remote(u)]


def duplicate_scripts_in_html(text: str) -> list[str]:
    """Scripts a page includes more than once (the same src, or the same inline code)."""
    parser = _Loads()
    parser.feed(text)
    parser.close()
    seen: set[str] = set()
    twice: list[str] = []
    for script in parser.scripts:
        key = script.strip()
        if not key:
            continue
        if key in seen and key not in twice:
            twice.append(key)
        seen.add(key)
    return [f"included twice: {k[:70]}" for k in twice]


def remote_loads_in_css(text: str) -> list[str]:
    """The remote addresses a stylesheet imports or loads (fonts, images)."""
    return [u for u in _CSS_URL.findall(text) if is_remote(u)]


def check_tree(root: Path) -> dict[str, list[str]]:
    """Map each offending file under ``root`` to the remote addresses it loads."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"root: {root} is not a directory")
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix == ".html":
            page = path.read_text(encoding="utf-8", errors="replace")
            bad = remote_loads_in_html(page) + duplicate_scripts_in_html(page)
        elif path.suffix == ".css":
            bad = remote_loads_in_css(path.read_text(encoding="utf-8", errors="replace"))
        else:
            continue
        if bad:
            found[str(path.relative_to(root))] = bad
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tests/offline_html.py BUILT_HTML_DIR", file=sys.stderr)
        return 2
    root = Path(argv[1])
    found = check_tree(root)
    pages = sum(1 for _ in root.rglob("*.html"))
    if found:
        print(f"offline check: {len(found)} file(s) load resources from the network "
              "or include a script twice:")
        for name, urls in found.items():
            for url in urls:
                print(f"  {name}: {url}")
        return 1
    if pages == 0:
        print(f"offline check: no HTML pages under {root}")
        return 1
    print(f"offline check: {pages} HTML pages load no script or stylesheet from the network")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
