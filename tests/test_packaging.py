"""The packaging files agree with each other and with the design."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

import dpsum

ROOT = Path(__file__).resolve().parents[1]

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")


def _name(requirement: str) -> str:
    """The normalised distribution name of a requirement string."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _pyproject():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def _environment():
    with open(ROOT / "environment.yml") as fh:
        return yaml.safe_load(fh)


def test_environment_names_the_same_packages_as_pyproject():
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    wanted = {_name(r) for r in project["dependencies"] + extras["test"] + extras["book"]
              + extras["dask"] + extras["fast"]}
    deps = _environment()["dependencies"]
    conda = {_name(d) for d in deps if isinstance(d, str)} - {"python", "pip"}
    pip_section = [d for d in deps if isinstance(d, dict)]
    assert len(pip_section) == 1 and list(pip_section[0]) == ["pip"]
    pip_lines = pip_section[0]["pip"]
    # the package itself, last; before it only what conda-forge does not carry
    assert pip_lines[-1] == "-e ."
    from_pip = {_name(r) for r in pip_lines[:-1]}
    assert not from_pip & conda
    named = conda | from_pip
    assert named == wanted, (
        f"only in environment.yml: {sorted(named - wanted)}; "
        f"only in pyproject.toml: {sorted(wanted - named)}"
    )


def test_jupyter_book_is_pinned_to_v1_in_both_files():
    book = [r for r in _pyproject()["project"]["optional-dependencies"]["book"]
            if _name(r) == "jupyter-book"]
    conda = [d for d in _environment()["dependencies"]
             if isinstance(d, str) and _name(d) == "jupyter-book"]
    for spec in book + conda:
        assert ">=1.0.4" in spec and "<2" in spec, spec


def test_benchmark_anchors_stay_out_of_the_runtime_requirements():
    project = _pyproject()["project"]
    runtime = {_name(r) for r in project["dependencies"]}
    assert runtime == {"numpy", "scipy"}
    bench = {_name(r) for r in project["optional-dependencies"]["bench"]}
    assert not bench & runtime


def test_version_matches_pyproject():
    assert dpsum.__version__ == _pyproject()["project"]["version"]


def test_ci_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    commands = [line.strip() for line in ci.splitlines()
                if line.strip() and not line.lstrip().startswith("#")]
    # a command, possibly behind the timing wrapper of .ci/run ("step make test")
    assert any(line.split()[-2:] == ["make", "test"] for line in commands)
    assert "make test" in (ROOT / "README.md").read_text()


def test_toc_lists_only_existing_pages():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [entry["file"] for entry in part["chapters"]]
    for entry in files:
        candidates = [ROOT / (entry + ext) for ext in (".md", ".ipynb")]
        assert any(c.exists() for c in candidates), f"{entry} is in _toc.yml but missing"
    chapters = sorted(p.stem for p in (ROOT / "book").glob("*.ipynb"))
    listed = {Path(f).name for f in files}
    assert set(chapters) <= listed, f"chapters missing from _toc.yml: {set(chapters) - listed}"
