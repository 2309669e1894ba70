"""The package's architecture, as a maintainer checks it.

- the layers contract of ``pyproject.toml`` ([tool.importlinter]): imports point
  down, no circles, function-level imports included (``lint-imports``);
- a top level of the 30-40 names a reader of the book calls;
- no module reaches into a private name of a module in another subpackage (a
  private helper several subpackages need lives in a private module, such as
  ``dpsum._validation`` or ``dpsum.kernels._rows``, which any module may use);
- none of the source's labels (the report's numbering, issue numbers) in the
  package: docstrings cite the book's own labels.
"""

from __future__ import annotations

import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import dpsum

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "dpsum"
MODULES = sorted(PACKAGE.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_package(name: str) -> bool:
    return (ROOT / name.replace(".", "/") / "__init__.py").is_file()


def _subpackage(name: str) -> str:
    """``dpsum.kernels.grid`` -> ``dpsum.kernels``; a top-level module is its own."""
    return ".".join(name.split(".")[:2])


def _is_private_module(name: str) -> bool:
    return any(part.startswith("_") for part in name.split(".")[1:])


def _lint_imports() -> str:
    exe = Path(sys.executable).with_name("lint-imports")
    found = str(exe) if exe.is_file() else shutil.which("lint-imports")
    if found is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[test]'")
    return found


def test_import_linter_contracts_are_kept():
    out = subprocess.run([_lint_imports(), "--no-cache", "--no-logo"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout, out.stdout


def test_the_layers_contract_covers_every_subpackage():
    """A subpackage missing from the contract would escape it silently."""
    import tomllib

    with open(ROOT / "pyproject.toml", "rb") as fh:
        config = tomllib.load(fh)["tool"]["importlinter"]
    (layers,) = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    listed = {name.strip() for layer in layers for name in layer.split("|")}
    children = {_subpackage(_module_name(p)) for p in MODULES} - {"dpsum"}
    assert children == listed, (f"not in the contract: {sorted(children - listed)}; "
                                f"not in the package: {sorted(listed - children)}")


def test_top_level_offers_30_to_45_names():
    names = dpsum.__all__
    assert 30 <= len(names) <= 45, len(names)
    assert len(set(names)) == len(names)
    assert all(hasattr(dpsum, name) for name in names)


#: The public surface beneath the top level: the ``__all__`` of every
#: subpackage and of every public single-module layer together.
MAX_PUBLIC_NAMES = 150


def _public_surface() -> dict[str, list[str]]:
    out = {}
    for path in MODULES:
        name = _module_name(path)
        if name == "dpsum" or _is_private_module(name):
            continue
        is_layer = path.name == "__init__.py" or path.parent == PACKAGE
        if is_layer or name == "dpsum.engines.dask":
            module = __import__(name, fromlist=["__all__"])
            out[name] = list(getattr(module, "__all__", ()))
    return out


def test_the_public_surface_is_at_most_150_names():
    """Internals that trust their input stay out of the ``__all__`` lists: a
    user can hold the surface in mind, and every name on it validates."""
    surface = _public_surface()
    total = sum(len(v) for v in surface.values())
    assert total <= MAX_PUBLIC_NAMES, {k: len(v) for k, v in surface.items()}
    for internal in ("center_step", "scales_step", "norm_quantile_step", "accumulate_grid",
                     "accumulate_clipped", "make_grid_plan"):
        assert not any(internal in names for names in surface.values()), internal


def test_subpackages_export_what_their_all_lists():
    for path in MODULES:
        name = _module_name(path)
        if path.name != "__init__.py" or name == "dpsum":
            continue
        module = __import__(name, fromlist=["__all__"])
        missing = [n for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
        assert not missing, (name, missing)


def _resolve(module: str, node: ast.ImportFrom) -> str | None:
    """The absolute module an ``ImportFrom`` node in ``module`` reads from."""
    if node.level == 0:
        return node.module
    package = module if _is_package(module) else module.rpartition(".")[0]
    base = package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_imports() -> list[str]:
    """Every private name a module takes from a public module of another subpackage:
    ``from m import _x`` (at any depth, function-level imports included) and
    ``alias._x`` where ``alias`` names such a module."""
    found = []
    for path in MODULES:
        here = _module_name(path)
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = _resolve(here, node)
                if not source or not source.startswith("dpsum"):
                    continue
                for a in node.names:
                    if _is_package(source) and (ROOT / source.replace(".", "/")
                                                / f"{a.name}.py").is_file() or _is_package(
                            f"{source}.{a.name}"):
                        aliases[a.asname or a.name] = f"{source}.{a.name}"   # a module
                        continue
                    if (a.name.startswith("_") and not _is_private_module(source)
                            and _subpackage(source) != _subpackage(here)):
                        found.append(f"{here}: from {source} import {a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("dpsum") and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id in aliases and node.attr.startswith("_")
                    and not node.attr.startswith("__")):
                source = aliases[node.value.id]
                if not _is_private_module(source) and _subpackage(source) != _subpackage(here):
                    found.append(f"{here}: {node.value.id}.{node.attr} ({source})")
    return sorted(set(found))


def test_no_module_imports_a_private_name_of_another_subpackage():
    assert _private_imports() == []


def test_the_private_import_check_sees_a_violation(tmp_path, monkeypatch):
    """The check above can fail: a planted cross-subpackage private import is found."""
    fake = tmp_path / "dpsum"
    shutil.copytree(PACKAGE, fake, ignore=shutil.ignore_patterns("__pycache__"))
    with open(fake / "bounds.py", "a") as fh:
        fh.write("\n\ndef _planted():\n    from dpsum.design.scaling import _normalise\n"
                 "    return _normalise\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "MODULES", sorted(fake.rglob("*.py")))
    assert "dpsum.bounds: from dpsum.design.scaling import _normalise" in _private_imports()


def _source_labels() -> list[re.Pattern[str]]:
    """The source's labels, from the one list the book's convention test reads
    (book/data/source_labels.txt), plus issue numbers."""
    lines = (ROOT / "book" / "data" / "source_labels.txt").read_text().splitlines()
    patterns = [line.split(" :: ", 1)[1] for line in lines
                if line.strip() and not line.startswith("#")]
    return [re.compile(p) for p in patterns] + [re.compile(r"\b(?i:issue)\s+#?\d+")]


#: a result of another work, cited by its own number: "Lemma 3.2 of Cesar and Rogers",
#: "(Cesar and Rogers 2021, Lemma 3.2)"
_CITED = re.compile(r"^,? (?:of|in) [A-Z]")
_CITED_BEFORE = re.compile(r"(?:1[89]|20)\d\d[a-z]?,\s*$")


def _label_hits(text: str) -> list[str]:
    hits = []
    for pattern in _source_labels():
        for match in pattern.finditer(text):
            if not (_CITED.match(text[match.end():])
                    or _CITED_BEFORE.search(text[:match.start()])):
                hits.append(match.group(0))
    return hits


def test_the_package_cites_no_labels_of_the_source():
    hits = []
    for path in MODULES:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            hits += [f"{path.relative_to(ROOT)}:{number}: {h!r}" for h in _label_hits(line)]
    assert not hits, f"{len(hits)} source labels:\n" + "\n".join(hits)


def test_the_label_check_sees_a_label():
    """The check above can fail, and lets a cited work's own numbering pass."""
    assert _label_hits("as in Algorithm 3 of the report") == ["Algorithm 3", "the report"]
    assert _label_hits("Lemma 3.2 of Cesar and Rogers bounds it") == []
    assert _label_hits("(Cesar and Rogers 2021, Lemma 3.2)") == []
    assert _label_hits("fixed in issue 16") == ["issue 16"]
