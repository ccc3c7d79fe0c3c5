"""Generate ``src/memstrata/aio/_generated.py``: the async mirror of ``Memory``.

``AsyncMemory`` has no logic of its own. Every public method of :class:`memstrata.Memory`
and of its layer services (``mem.key``, ``mem.facts``, ...) gets an ``async def`` twin with
the same parameters, defaults, annotations and docstring, whose body runs the sync method on
the memory's own thread (``aio/_thread.py``). Copying ~50 signatures by hand would drift, so
this script reads them from the source and ``tests/aio/test_generated.py`` fails when the
generated file is stale (as unasync's CI check does for httpcore).

    python scripts/gen_aio.py          # rewrite the file
    python scripts/gen_aio.py --check  # exit 1 if it is stale
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "src" / "memstrata" / "aio" / "_generated.py"
PACKAGE = "memstrata"
HERE = "memstrata.aio"  # the generated module's package, for relative imports

# The layer services the sync Memory exposes as properties, and their async twins.
SERVICES = {
    "key": ("memstrata.layers.key", "KeyMemoryService", "AsyncKeyMemory"),
    "tasks": ("memstrata.layers.working", "TaskService", "AsyncTasks"),
    "facts": ("memstrata.layers.semantic", "FactService", "AsyncFacts"),
    "episodes": ("memstrata.layers.episodic", "EpisodeService", "AsyncEpisodes"),
    "knowledge": ("memstrata.layers.knowledge", "KnowledgeService", "AsyncKnowledge"),
    "procedures": ("memstrata.layers.procedural", "ProceduralService", "AsyncProcedures"),
}
# Public members of Memory that are not mirrored, and why (tests/aio checks this list).
EXCLUDED = {
    "store": "the store is confined to the memory's thread; use the async methods",
    "embedder": "a provider object confined to the memory's thread (calling it would block)",
    "llm": "a provider object confined to the memory's thread (calling it would block)",
    "clock": "read it from the clock you passed in (clock=...)",
    "run_worker": "would hold the memory's only thread forever; use background=True "
    "(the default) or `memstrata worker`",
}
LIFECYCLE = {"close"}  # mirrored by hand-written code in aio/_thread.py semantics
BUILTIN_NAMES = {
    "None",
    "str",
    "int",
    "float",
    "bool",
    "object",
    "bytes",
    "dict",
    "list",
    "tuple",
    "set",
    "frozenset",
    "type",
}


@dataclass
class Imports:
    """Names the generated code needs, each bound exactly as its source module binds it."""

    modules: dict[str, set[tuple[str, str]]]  # module -> {(name, alias)}
    plain: set[str]  # `import x`

    def bind(self, name: str, module: str, attr: str | None) -> None:
        if attr is None:
            if "." in module or module != name:
                parent, _, leaf = module.rpartition(".")
                self.modules.setdefault(parent, set()).add((leaf, name))
            else:
                self.plain.add(module)
            return
        self.modules.setdefault(module, set()).add((attr, name))


def _relative(module: str) -> str:
    if module == PACKAGE:
        return ".."
    if module.startswith(PACKAGE + "."):
        return ".." + module[len(PACKAGE) + 1 :]
    return module


def _bindings(module_name: str) -> dict[str, tuple[str, str | None]]:
    """name -> (absolute module, attribute or None for a module) for one source module."""
    mod = importlib.import_module(module_name)
    tree = ast.parse(Path(inspect.getfile(mod)).read_text(encoding="utf-8"))
    out: dict[str, tuple[str, str | None]] = {}
    package = module_name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            for alias in node.names:
                local = alias.asname or alias.name
                value = vars(mod).get(local)
                out[local] = (
                    (value.__name__, None) if inspect.ismodule(value) else (base, alias.name)
                )
        elif isinstance(node, ast.Import):
            for alias in node.names:
                out[alias.asname or alias.name.split(".")[0]] = (alias.name, None)
    for name in vars(mod):  # defined in the module itself
        if name not in out and not name.startswith("__"):
            out[name] = (module_name, name)
    return out


def _function(cls: type, name: str) -> tuple[ast.FunctionDef, str, str, int]:
    """The method's AST, defining module, dedented source and the indent dedent removed."""
    for klass in cls.__mro__:
        if name in vars(klass):
            member = vars(klass)[name]
            fn = member.fget if isinstance(member, property) else member
            raw = inspect.getsource(fn)
            source = textwrap.dedent(raw)
            node = ast.parse(source).body[0]
            assert isinstance(node, ast.FunctionDef), name
            indent = len(raw) - len(raw.lstrip(" "))
            return node, fn.__module__, source, indent
    raise LookupError(name)


def _names(node: ast.AST | None) -> set[str]:
    if node is None:
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class Generator:
    def __init__(self) -> None:
        self.imports = Imports({}, set())
        self.seen: dict[str, tuple[str, str | None]] = {}
        self.source = ""  # the dedented source of the method being mirrored

    def need(self, names: set[str], module: str) -> None:
        table = _bindings(module)
        for name in sorted(names - BUILTIN_NAMES):
            binding = table.get(name)
            if binding is None:
                raise LookupError(f"{name!r} used by {module} is not bound there")
            if self.seen.setdefault(name, binding) != binding:
                raise ValueError(f"{name!r} means {self.seen[name]} and {binding}: rename one")
            self.imports.bind(name, *binding)

    def text(self, node: ast.expr) -> str:
        """An annotation or default exactly as the source spells it."""
        segment = ast.get_source_segment(self.source, node)
        if segment is None or "\n" in segment:
            return ast.unparse(node)
        return segment

    def signature(self, node: ast.FunctionDef, module: str) -> tuple[list[str], str, str]:
        """The parameter lines (self included), the return annotation, the forwarding call."""
        args = node.args
        used: set[str] = _names(node.returns)
        lines, call = [], []
        positional = args.posonlyargs + args.args
        defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            if i == len(args.posonlyargs) and args.posonlyargs:
                lines.append("/")
            lines.append(self._param(arg, default))
            used |= _names(arg.annotation) | _names(default)
            if i:
                call.append(arg.arg)
        if args.vararg is not None:
            lines.append("*" + self._param(args.vararg, None))
            call.append("*" + args.vararg.arg)
            used |= _names(args.vararg.annotation)
        elif args.kwonlyargs:
            lines.append("*")
        for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            lines.append(self._param(arg, kw_default))
            used |= _names(arg.annotation) | _names(kw_default)
            call.append(f"{arg.arg}={arg.arg}")
        if args.kwarg is not None:
            lines.append("**" + self._param(args.kwarg, None))
            call.append("**" + args.kwarg.arg)
            used |= _names(args.kwarg.annotation)
        self.need(used, module)
        returns = self.text(node.returns) if node.returns is not None else "None"
        return lines, returns, ", ".join(call)

    def _param(self, arg: ast.arg, default: ast.expr | None) -> str:
        text = arg.arg
        if arg.annotation is not None:
            text += f": {self.text(arg.annotation)}"
        if default is not None:
            text += (
                f" = {self.text(default)}"
                if arg.annotation is not None
                else f"={self.text(default)}"
            )
        return text

    @staticmethod
    def docstring(node: ast.FunctionDef, source: str, indent: int) -> str | None:
        first = node.body[0]
        if not (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            return None
        segment = ast.get_source_segment(source, first, padded=False)
        assert segment is not None
        first_line, *rest = segment.split("\n")
        # dedent took ``indent`` columns off the continuation lines; the twin sits as deep
        return "\n".join([first_line, *((" " * indent + r) if r else r for r in rest)])

    def method(self, cls: type, name: str, target: str) -> list[str]:
        node, module, self.source, indent = _function(cls, name)
        params, returns, call = self.signature(node, module)
        out = [
            "",
            "    async def " + name + "(",
            *[f"        {p}," for p in params],
            f"    ) -> {returns}:",
        ]
        doc = self.docstring(node, self.source, indent)
        if doc is not None:
            out.append("        " + doc)
        lines = call.split(", ") if call else []
        invoke = (
            [
                f"            lambda m: m.{target}{name}(",
                *[f"                {a}," for a in lines],
                "            )",
            ]
            if lines
            else [f"            lambda m: m.{target}{name}()"]
        )
        prefix = "" if returns == "None" else "return "
        out += [f"        {prefix}await self._run(", *invoke, "        )"]
        return out

    def public_methods(self, cls: type) -> list[str]:
        names = []
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") or not (inspect.isfunction(member)):
                continue
            names.append(name)
        return names

    def service_class(self, module: str, sync_name: str, async_name: str, attr: str) -> list[str]:
        cls = getattr(importlib.import_module(module), sync_name)
        out = [
            "",
            "",
            f"class {async_name}(ThreadConfinedService):",
            f'    """``mem.{attr}`` of :class:`AsyncMemory`: :class:`{sync_name}` with ``await``.',
            "",
            '    Each call runs on the memory\'s thread (see :mod:`memstrata.aio`)."""',
        ]
        for name in self.public_methods(cls):
            out += self.method(cls, name, f"{attr}.")
        return out

    def memory_class(self) -> list[str]:
        from memstrata.memory import Memory

        self.need({"Memory"}, "memstrata.memory")
        out = [
            "",
            "",
            "class AsyncMemory(ThreadConfinedMemory):",
            '    """:class:`Memory` with ``await``: the same methods, parameters, types and '
            "errors.",
            "",
            "    The sync memory is built and always used on one thread of its own, so calls "
            "never block",
            "    the event loop and run one at a time in the order they were awaited. See",
            '    :mod:`memstrata.aio` for the lifecycle and cancellation."""',
        ]
        init, module, self.source, _ = _function(Memory, "__init__")
        params, _, call = self.signature(init, module)
        out += [
            "",
            "    def __init__(",
            *[f"        {p}," for p in params],
            "    ) -> None:",
            "        super().__init__(",
            "            lambda: Memory(",
            *[f"                {a}," for a in call.split(", ")],
            "            )",
            "        )",
        ]
        for name, (_mod, _sync, async_name) in SERVICES.items():
            out += [
                "",
                "    @property",
                f"    def {name}(self) -> {async_name}:",
                f"        return {async_name}(self)",
            ]
        for name, member in sorted(vars(Memory).items()):
            if name.startswith("_") or name in SERVICES or name in EXCLUDED:
                continue
            if name in LIFECYCLE:
                continue
            if not inspect.isfunction(member):
                raise ValueError(f"Memory.{name} is neither mirrored nor EXCLUDED")
            out += self.method(Memory, name, "")
        return out

    def render(self) -> str:
        body: list[str] = []
        for attr, (module, sync_name, async_name) in SERVICES.items():
            body += self.service_class(module, sync_name, async_name, attr)
        body = self.memory_class() + body
        head = [
            '"""The async mirror of ``Memory``. GENERATED by scripts/gen_aio.py: do not edit.',
            "",
            "Regenerate with ``python scripts/gen_aio.py`` after changing a "
            "public method of ``Memory`` or",
            'of a layer service; tests/aio fails while this file is stale."""',
            "",
            "from __future__ import annotations",
            "",
        ]
        std = sorted(m for m in self.imports.modules if not m.startswith(PACKAGE))
        ours = [m for m in self.imports.modules if m.startswith(PACKAGE)]
        lines = [f"import {m}" for m in sorted(self.imports.plain)]
        lines += [self._from(m) for m in std]
        head += lines + [""]
        ours_lines = [self._from(m, relative=True) for m in ours]
        ours_lines.append("from ._thread import ThreadConfinedMemory, ThreadConfinedService")
        head += sorted(ours_lines, key=_isort_key)
        head += [
            "",
            "__all__ = [",
            *[f'    "{n}",' for n in sorted(["AsyncMemory", *(s[2] for s in SERVICES.values())])],
            "]",
        ]
        return "\n".join(head + body) + "\n"

    def _from(self, module: str, *, relative: bool = False) -> str:
        names = sorted(self.imports.modules[module], key=_name_key)
        parts = [n if n == a else f"{n} as {a}" for n, a in names]
        mod = _relative(module) if relative else module
        line = f"from {mod} import {', '.join(parts)}"
        if len(line) <= 100:
            return line
        return f"from {mod} import (\n" + "".join(f"    {p},\n" for p in parts) + ")"


def _name_key(binding: tuple[str, str]) -> tuple[int, str]:
    """isort's order-by-type (ruff's default): CONSTANTS, then Classes, then functions."""
    name = binding[0]
    rank = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
    return (rank, name)


def _isort_key(line: str) -> tuple[int, str]:
    module = line.split()[1]
    dots = len(module) - len(module.lstrip("."))
    return (-dots, module.lstrip(".").lower())


def render() -> str:
    sys.path.insert(0, str(ROOT / "src"))
    return Generator().render()


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is stale: run python scripts/gen_aio.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
