"""The package's imports keep its layers: no cycle, nothing below ``cli`` reaches back
up into it, and click is imported only by ``cli/`` and the fast entry.

The imports are read from the source (``ast``), so that every module counts, whether a
test runs it or not. Which imports count for which rule:

- **Cycles** are among module-level imports, ``if TYPE_CHECKING:`` ones included: two
  modules that name each other at the top cannot be read, tested or moved apart (and
  without the guard one of them would load half-initialised). A function-local import
  runs once both modules are loaded, so it is left out here; it counts for the
  layering rules instead.
- **No import into cli from a lower layer** and **click only where allowed** count every
  import: module-level, function-local and ``TYPE_CHECKING`` alike. A deferred import
  is still a dependency on the layer above, and a type-only one still ties the layers'
  names together.

A last test imports every module outside ``cli/`` in a fresh interpreter where click
cannot be imported at all, as the ``cli/__init__`` docstring promises they can be.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "cachediag"

TOP = ("cachediag.cli", "cachediag.entry")
"""The top layer: the click commands, and the console entry that dispatches to them."""
CLICK_ALLOWED = TOP
"""Where ``import click`` may appear: the click commands, and the console entry, which
hands ``statusline``, ``analyze --json`` and ``audit --json`` on before click loads."""


@dataclass(frozen=True, slots=True)
class Import:
    target: str
    line: int
    module_level: bool
    type_only: bool


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(name: str, path: Path) -> list[Import]:
    """Every import statement of the module, with the module it names resolved (a
    relative one against the module's package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, module_level: bool, type_only: bool) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(alias.name, node.lineno, module_level, type_only))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                # ``from pkg import mod`` imports the module pkg.mod when there is one.
                found.append(Import(f"{base}.{alias.name}", node.lineno, module_level, type_only))
            found.append(Import(base, node.lineno, module_level, type_only))
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, module_level, True)
            for child in node.orelse:
                visit(child, module_level, type_only)
        else:
            inner = module_level and not isinstance(
                node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            for sub in ast.iter_child_nodes(node):
                visit(sub, inner, type_only)

    visit(tree, True, False)
    return found


def _in(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def _known(target: str, known: dict[str, Path]) -> str | None:
    """The package module ``target`` loads (``pkg.mod.attr`` -> ``pkg.mod``)."""
    while target and target not in known:
        target = target.rpartition(".")[0]
    return target or None


def load_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports at module level (each one's parent
    packages too: importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__``)."""
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        edges: set[str] = set()
        for imp in imports_of(name, path):
            target = _known(imp.target, known) if imp.module_level else None
            while target:
                if target != name:
                    edges.add(target)
                target = target.rpartition(".")[0]
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return groups


PENDING_CYCLES: list[list[str]] = []
"""Cycles still to be broken: none may be added (the last, ``proxy.recording`` and
``proxy.worker``, ended when ``Exchange`` moved to ``proxy.exchange``)."""


def test_no_import_cycle() -> None:
    graph = load_graph()
    assert "cachediag.commands.window" in graph  # the walk found the package
    # A package's own __init__ importing its submodules is loading, not a cycle:
    # ``a.b`` -> ``a`` is implied by the interpreter and not a choice of the code.
    for name, edges in graph.items():
        graph[name] = {e for e in edges if not name.startswith(e + ".")}
    assert cycles(graph) == PENDING_CYCLES


def test_cycle_finder_finds_a_cycle() -> None:
    """The check itself: a made-up cycle of three, and a chain that is none."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def imports_into(targets: tuple[str, ...], outside: tuple[str, ...]) -> list[str]:
    """Where a module not in ``outside`` imports one of ``targets`` (any import)."""
    return [
        f"{name}:{imp.line} imports {imp.target}"
        for name, path in modules().items()
        if not _in(name, outside)
        for imp in imports_of(name, path)
        if _in(imp.target, targets)
    ]


def test_nothing_below_cli_imports_cli() -> None:
    assert imports_into(("cachediag.cli",), TOP) == []


def test_click_is_imported_only_by_cli_and_the_entry() -> None:
    assert imports_into(("click",), CLICK_ALLOWED) == []
    # The walk sees click where it is (else the test above would pass on nothing).
    assert imports_into(("click",), ("cachediag.entry",))


def test_function_local_and_type_only_imports_are_seen(tmp_path: Path) -> None:
    """The walk reads the imports the layering rules count: one inside a function, one
    under TYPE_CHECKING, a relative one."""
    source = tmp_path / "cachediag" / "report" / "m.py"
    source.parent.mkdir(parents=True)
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from ..cli import common\n"
        "def f():\n"
        "    import click\n",
        encoding="utf-8",
    )
    found = {
        (i.target, i.module_level, i.type_only) for i in imports_of("cachediag.report.m", source)
    }
    assert ("cachediag.cli.common", True, True) in found
    assert ("click", False, False) in found


def test_every_module_outside_cli_imports_without_click() -> None:
    """Import them all in an interpreter where ``import click`` fails (an optional
    dependency that is not installed, pyarrow say, is not this test's concern)."""
    names = sorted(n for n in modules() if not _in(n, CLICK_ALLOWED))
    code = (
        "import importlib, sys\n"
        "sys.modules['click'] = None\n"
        "failed = []\n"
        "for name in sys.argv[1:]:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:\n"
        "        if (exc.name or '').split('.')[0] == 'click':\n"
        "            failed.append(f'{name}: {exc}')\n"
        "print('\\n'.join(failed))\n"
        "sys.exit(1 if failed else 0)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *names],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
