"""The package's shape, as a maintainer reads it: lines per module, top-level names,
import circles and cross-module imports of private names.

Usage: python benchmarks/architecture.py [PATH_TO_PACKAGE_PARENT]

Prints one line per module (lines of source), then the totals. A circle is a
strongly connected component of the module import graph (every import counted,
function-level ones included); a private import is ``from A import _name`` where
``A`` is another module and neither it nor the importer's package marks it private
(a module whose own name starts with ``_``).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path


def modules(root: Path) -> dict[str, Path]:
    out = {}
    for f in sorted((root / "dpsum").rglob("*.py")):
        parts = list(f.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, list[str]]]:
    """(imported module, imported names) for every import in the module."""
    pkg = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")
                base = base[: len(base) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names = [a.name for a in node.names]
            if mod in known:
                sub = [f"{mod}.{n}" for n in names if f"{mod}.{n}" in known]
                found.append((mod, [n for n in names if f"{mod}.{n}" not in known]))
                found += [(s, []) for s in sub]
        elif isinstance(node, ast.Import):
            found += [(a.name, []) for a in node.names if a.name in known]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "import_module":
            if node.args and isinstance(node.args[0], ast.Constant):
                target = str(node.args[0].value)
                if target.startswith("."):
                    target = pkg + target
                if target in known:
                    found.append((target, []))
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main(root: Path) -> None:
    mods = modules(root)
    known = set(mods)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    private = []
    for m, path in mods.items():
        for target, names in imports(m, path, known):
            # a package's __init__ re-exporting its own modules is not a dependency edge
            if not (path.name == "__init__.py" and target.startswith(m + ".")):
                graph[m].add(target)
            same_pkg = target.rsplit(".", 1)[0] == m.rsplit(".", 1)[0]
            private_module = target.rsplit(".", 1)[-1].startswith("_")
            for n in names:
                if n.startswith("_") and not private_module and not same_pkg:
                    private.append(f"{m} <- {target}.{n}")
                elif n.startswith("_") and not private_module and same_pkg and target != m:
                    private.append(f"{m} <- {target}.{n}")
        # private names reached through a module alias: ``from . import grid`` ... ``grid._plan``
        tree = ast.parse(path.read_text())
        aliases = {}
        for target, names in imports(m, path, known):
            pass
        pkg = m if path.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1] if node.level else []
                mod = ".".join(base + ([node.module] if node.module else [])) if node.level \
                    else (node.module or "")
                for a in node.names:
                    if f"{mod}.{a.name}" in known:
                        aliases[a.asname or a.name] = f"{mod}.{a.name}"
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id in aliases and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                target = aliases[node.value.id]
                if not target.rsplit(".", 1)[-1].startswith("_"):
                    private.append(f"{m} <- {target}.{node.attr}")
        # importlib-based lazy imports (module __getattr__ tables) count as edges
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.value.startswith("dpsum.") and ":" in node.value:
                target = node.value.split(":")[0]
                if target in known:
                    graph[m].add(target)
    lines = {m: len(p.read_text().splitlines()) for m, p in mods.items()}
    for m in sorted(mods):
        print(f"{lines[m]:6d}  {m}")
    top = subprocess.run([sys.executable, "-c", "import dpsum; print(len(dpsum.__all__))"],
                         capture_output=True, text=True, cwd=root).stdout.strip()
    # graph without package __init__ aggregation edges: circles among real modules
    cyc = circles(graph)
    print(f"modules: {len(mods)}, lines: {sum(lines.values())}, "
          f"largest: {max(lines.values())}, top-level names: {top}")
    print(f"import circles: {len(cyc)}")
    for c in cyc:
        print("   ", " <-> ".join(c))
    print(f"cross-module private imports: {len(private)}")
    for p in private:
        print("   ", p)


if __name__ == "__main__":
    main(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
