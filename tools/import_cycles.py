"""The largest import cycle of the product code, type-only imports included (a developer tool).

Usage: python tools/import_cycles.py [--top N] [--show]
Reads every module of the installed rooms (the folders pyproject.toml maps to minipulsar.<room>)
with `ast`, takes every `import`/`from ... import` of a minipulsar module — at module level,
inside functions and under `if TYPE_CHECKING:` alike, since a type-only import still ties the two
modules together for a reader — and prints the strongly connected components of that graph,
largest first (Tarjan's algorithm). `--show` lists the modules of each printed component.
tests/unit/package/test_import_cycles.py holds the bound the layout keeps.
"""
from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# minipulsar.<room> -> folder; the namespace's own folder holds minipulsar/__init__ etc.
ROOMS = ("broker", "client", "proto", "storage", "pipeline", "cli", "functions")


def module_files() -> dict[str, Path]:
    """'minipulsar.broker.topic' -> its file, for every .py file of the rooms and minipulsar/."""
    found = {}
    for room in ROOMS + ("minipulsar",):
        folder = ROOT / room
        if not folder.is_dir():
            continue
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            prefix = ["minipulsar"] if room == "minipulsar" else ["minipulsar", room]
            found[".".join(prefix + parts)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The longest prefix of the dotted name that is one of our modules."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """Our modules that `module` imports anywhere in its file (type-only imports included)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` names the submodule when there is one, else an attribute of pkg.
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                     for alias in node.names]
        else:
            continue
        for name in names:
            target = _resolve(name, modules)
            if target is not None and target != module:
                out.add(target)
    return out


def graph() -> dict[str, set[str]]:
    modules = module_files()
    return {name: imports_of(name, path, modules) for name, path in modules.items()}


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module, largest first (iterative: no recursion limit)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out, key=len, reverse=True)


def largest_cycle() -> int:
    """Modules in the largest import cycle (0 when there is none)."""
    components = strongly_connected(graph())
    return len(components[0]) if components else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=5, help="components to print (largest first)")
    parser.add_argument("--show", action="store_true", help="list each component's modules")
    args = parser.parse_args(argv)
    edges = graph()
    components = strongly_connected(edges)
    print(f"{len(edges)} modules, {len(components)} import cycles; largest: "
          f"{len(components[0]) if components else 0} modules")
    for component in components[: args.top]:
        print(f"- {len(component)} modules" + (":" if args.show else ""))
        if args.show:
            for name in component:
                print(f"    {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
