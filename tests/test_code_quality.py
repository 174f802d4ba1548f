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
    result = run("mypy", "grove", "passages", "links", "notebooks", "ask", "sharing",
                 GROVE_HOME=str(tmp_path / "home"), DJANGO_SETTINGS_MODULE="grove.settings")
    assert result.returncode == 0, result.stdout + result.stderr


# -- the layout (STYLE "Layers and where code lives") ------------------------------------------

APPS = ("grove", "passages", "links", "notebooks", "ask", "sharing")
FEATURES = ("passages", "links", "notebooks", "ask", "sharing")
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


# grove/'s floors, bottom up (STYLE "The core itself has floors"): a module may import its
# own floor and those below, never one above. The core's tables (`grove.models`) stand on
# the kernel's floor; everything else outside the floor packages is assembly (settings,
# urls, asgi, celery, tasks, apps, the management commands Django finds by name).
CORE_FLOORS = ("kernel", "embeddings", "identity", "interfaces", "runtime", "assembly")


def _floor(module: str) -> str:
    parts = module.split(".")
    if module == "grove.models":
        return "kernel"
    if len(parts) > 1 and parts[1] in CORE_FLOORS[:-1]:
        return parts[1]
    return "assembly"


def _graph() -> dict[str, dict[str, int]]:
    """module → {module it imports: line}, over every module of the apps. An import is
    any `import`/`from … import` in the file, at the top or inside a function (a
    function-local import is a dependency all the same); `from package import name`
    depends on `package.name` when that is a module, else on the package."""
    import ast

    paths = dict(_modules())
    graph: dict[str, dict[str, int]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([node.module] if node.module else [])])
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in paths else base
                         for alias in node.names]
            else:
                continue
            for name in names:
                while name and name not in paths:
                    name = name.rpartition(".")[0]
                if name and name != module:
                    edges.setdefault(name, node.lineno)
        graph[module] = edges
    return graph


def test_the_core_floors_import_only_their_own_floor_and_below():
    """kernel < embeddings < identity < interfaces < runtime < assembly (the kernel also
    imports no app: `test_the_core_imports_no_feature_app`)."""
    rank = {floor: n for n, floor in enumerate(CORE_FLOORS)}
    graph = _graph()
    upward = sorted(f"{module}:{line} ({_floor(module)}) imports {target} ({_floor(target)})"
                    for module, edges in graph.items() if module.split(".")[0] == "grove"
                    for target, line in edges.items() if target.split(".")[0] == "grove"
                    if rank[_floor(target)] > rank[_floor(module)])
    assert not upward, "move the code to the floor it belongs on:\n" + "\n".join(upward)


def _cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One loop through each strongly connected group of modules (Tarjan), as the chain
    of modules that import one another, the first repeated at the end."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the number of modules
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    loops = []
    for group in groups:
        start = min(group)
        paths = {start: [start]}
        queue = [start]
        while queue:  # breadth first, inside the group, back to the start
            node = queue.pop(0)
            for target in sorted(graph[node]):
                if target == start:
                    loops.append(paths[node] + [start])
                    queue = []
                    break
                if target in group and target not in paths:
                    paths[target] = paths[node] + [target]
                    queue.append(target)
    return sorted(loops)


def test_no_import_loops():
    """No module imports itself through others — within grove/, within an app or across
    apps. Break a loop by moving what both sides need down to the floor or layer below
    them, not by hiding one import inside a function."""
    graph = _graph()
    loops = [" → ".join(f"{a}:{graph[a][b]}" for a, b in zip(loop, loop[1:], strict=False))
             + f" → {loop[-1]}" for loop in _cycles(graph)]
    assert not loops, "import loops:\n" + "\n".join(loops)


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
    named = set(re.findall(r"`((?:grove|passages|notebooks|ask|sharing|tests|bench)/[\w/*.]+\.py)`",
                           document))
    missing = sorted(p for p in named if not list(REPO.glob(p)))
    assert named and not missing, missing
