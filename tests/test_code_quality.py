"""Lint and types are part of the suite, so CI enforces them (STYLE §11)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, check=False, env={**os.environ, **env})


def test_ruff():
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy(tmp_path):
    # The django-stubs plugin loads Grove's settings: give it a throwaway data folder.
    result = run("mypy", "grove", "notebooks", "ask", "sharing",
                 GROVE_HOME=str(tmp_path / "home"), DJANGO_SETTINGS_MODULE="grove.settings")
    assert result.returncode == 0, result.stdout + result.stderr


# -- the layout (STYLE "Layers and where code lives") ------------------------------------------

APPS = ("grove", "notebooks", "ask", "sharing")
FEATURES = ("notebooks", "ask", "sharing")
MAX_MODULE_LINES = 500


def _modules() -> list[tuple[str, Path]]:
    found = []
    for app in APPS:
        for path in sorted((REPO / app).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            dotted = ".".join(path.relative_to(REPO).with_suffix("").parts)
            found.append((dotted.removesuffix(".__init__"), path))
    return found


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    import ast

    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _layer(module: str) -> str | None:
    """rules | schemas | selectors | services for a feature module, else None."""
    parts = module.split(".")
    for layer in ("rules", "schemas", "selectors", "services"):
        if layer in parts[1:2] or (len(parts) > 2 and parts[1] == "identity" and parts[2] == layer):
            return layer
    return None


def _in(imported: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(name for name in imported
                  if any(name == p or name.startswith(p + ".") for p in prefixes))


def test_no_module_passes_the_size_where_it_becomes_a_package():
    long = {m: n for m, p in _modules() if (n := len(p.read_text().splitlines()))
            > MAX_MODULE_LINES}
    assert not long, f"split these into packages (STYLE): {long}"


def test_the_kernel_imports_no_app_and_no_floor_above_it():
    offenders = {m: bad for m, p in _modules() if m.startswith("grove.kernel")
                 if (bad := _in(_imports(p), (*FEATURES, "grove.identity", "grove.interfaces",
                                              "grove.runtime")))}
    assert not offenders, offenders


def test_the_core_imports_no_feature_app():
    offenders = {m: bad for m, p in _modules() if m.split(".")[0] == "grove"
                 if (bad := _in(_imports(p), FEATURES))}
    assert not offenders, f"grove/ names feature apps by string only: {offenders}"


def test_reads_never_import_writes_and_shapes_import_neither():
    forbidden = {
        "rules": ("selectors", "services", "schemas"),
        "schemas": ("selectors", "services"),
        "selectors": ("services",),
    }
    offenders = {}
    for module, path in _modules():
        layer = _layer(module)
        if layer not in forbidden:
            continue
        prefixes = tuple(f"{app}.{below}" for app in (*FEATURES, "grove.identity")
                         for below in forbidden[layer])
        if bad := _in(_imports(path), prefixes):
            offenders[module] = bad
    assert not offenders, offenders


def test_the_architecture_document_names_files_that_exist():
    """docs/architecture.md follows the tree: every module path it names is there."""
    import re

    document = (REPO / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`((?:grove|notebooks|ask|sharing|tests|bench)/[\w/*.]+\.py)`",
                           document))
    missing = sorted(p for p in named if not list(REPO.glob(p)))
    assert named and not missing, missing
