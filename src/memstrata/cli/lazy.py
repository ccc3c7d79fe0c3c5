"""A command is built, and its module imported, only when the command line names it.

Every CLI call pays for what the root group builds. typer builds a click command for every
registered function up front (reading its signature and type hints), and the modules behind
``maintain``, ``serve`` or ``bench`` import parts of the library. :class:`LazyGroup` is the
root group (``typer.Typer(cls=...)``): its ``commands`` mapping builds the one command asked
for, from the app's own commands (``own``) or from the module that registers it
(``modules``). Listing every command (``--help``, shell completion, a name the table does not
know) builds them all, so a table that has fallen behind a module costs time, never a
missing command.

It also gives plain ``str``/``int``/``float`` parameters a plain coercion. typer (>= 0.2x)
validates each value through a pydantic ``TypeAdapter``; importing pydantic and building the
adapters is ~0.1 s of every call, more than a read-only command's own work. The coercion
goes into typer's per-parameter slot for it (``_runtime_param``); a typer without that slot
keeps its own coercion (slower, same results).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from importlib import import_module
from typing import Any, get_args

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["LazyCommands", "LazyGroup", "load_module_commands", "plain_coercion"]

Command = Any  # typer's vendored click Command (typer._click.Command); not public API


def _bad(message: str, param: Any, ctx: Any) -> Exception:
    from typer._click.exceptions import BadParameter

    return BadParameter(message, ctx=ctx, param=param)


def _to_str(value: Any) -> str:
    if isinstance(value, bytes):  # what typer does with undecodable argv
        try:
            return value.decode(sys.getfilesystemencoding())
        except UnicodeError:
            return value.decode("utf-8", "replace")
    return str(value)


def _to_number(kind: type[Any], value: Any, param: Any, ctx: Any) -> Any:
    if isinstance(value, kind) and not isinstance(value, bool):
        return value
    text = _to_str(value).strip()
    try:
        return kind(text)
    except ValueError:
        what = "an integer" if kind is int else "a number"
        raise _bad(f"{text!r} is not {what}.", param, ctx) from None


_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"", "0", "off", "f", "false", "n", "no"})


def _to_bool(value: Any, param: Any, ctx: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = _to_str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise _bad(f"{value!r} is not a boolean (true/false, yes/no, 1/0).", param, ctx)


def _in_range(number: Any, info: Any, param: Any, ctx: Any) -> Any:
    low, high = info.min, info.max
    if info.clamp:
        return (
            max(low, number)
            if low is not None and number < low
            else (min(high, number) if high is not None and number > high else number)
        )
    if (low is not None and number < low) or (high is not None and number > high):
        span = " and ".join(
            ([f">= {low}"] if low is not None else [])
            + ([f"<= {high}"] if high is not None else [])
        )
        raise _bad(f"{number} is not {span}.", param, ctx)
    return number


def _plain_value(kind: type[Any], info: Any, value: Any, param: Any, ctx: Any) -> Any:
    if kind is str:
        return _to_str(value)
    if kind is bool:
        return _to_bool(value, param, ctx)
    return _in_range(_to_number(kind, value, param, ctx), info, param, ctx)


try:  # typer's per-parameter coercion (typer >= 0.2x); absent: typer's own path is used
    from typer._coercion import RuntimeParam

    _TYPER_COERCES = True
except ImportError:  # pragma: no cover - depends on the installed typer
    _TYPER_COERCES = False


if _TYPER_COERCES:

    class _Plain(RuntimeParam):
        """What pydantic's lax mode makes of the command-line strings these parameters
        receive (str, bool words, int, float, bounds, lists of them), without pydantic."""

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            info = self.parameter_info
            if isinstance(self.annotation, type):
                return _plain_value(self.annotation, info, value, param, ctx)
            kind = get_args(self.annotation)[0]  # list[X]
            items = value if isinstance(value, (list, tuple)) else [value]
            return [_plain_value(kind, info, item, param, ctx) for item in items]


_PLAIN_TYPES = (str, bool, int, float)


def plain_coercion(param: Any) -> bool:
    """Give ``param`` a plain coercion when it is a ``str``, ``bool``, ``int`` or ``float``
    (or a list of one of them) without choices, paths, files or a parser; returns whether
    it did."""
    desc = getattr(param, "type_descriptor", None)
    if not _TYPER_COERCES or desc is None or getattr(param, "_runtime_param", 0) is not None:
        return False
    info = desc.parameter_info
    kind = desc.annotation
    if desc.is_list:
        args = get_args(kind)
        if len(args) != 1 or args[0] not in _PLAIN_TYPES:
            return False
    elif kind not in _PLAIN_TYPES:
        return False
    if (
        getattr(info, "parser", None) is not None
        or desc.is_choice
        or desc.is_path
        or desc.is_file
        or desc.is_tuple
    ):
        return False
    param._runtime_param = _Plain(parameter_info=info, annotation=kind)
    return True


def _plain_params(command: Command) -> Command:
    """Plain coercion for ``command``'s parameters, and for its ``--help`` option, which
    click creates when the command is first parsed."""
    for param in getattr(command, "params", ()):
        plain_coercion(param)
    original = getattr(command, "get_help_option", None)
    if original is not None and not getattr(original, "_memstrata_plain", False):

        def get_help_option(ctx: Any) -> Any:
            option = original(ctx)
            if option is not None:
                plain_coercion(option)
            return option

        get_help_option._memstrata_plain = True  # type: ignore[attr-defined]
        command.get_help_option = get_help_option
    return command


def _plain_tree(command: Command) -> Command:
    _plain_params(command)
    for sub in getattr(command, "commands", {}).values():
        _plain_tree(sub)
    return command


class _Source:
    """The commands and groups registered on one Typer app, each built when first asked
    for; their one-line help is read without building them (for ``--help``)."""

    def __init__(self, app: typer.Typer) -> None:
        from typer.main import get_command_name, solve_typer_info_defaults

        self._app = app
        self._infos: dict[str, Any] = {}
        for info in app.registered_commands:
            if info.callback is not None:
                self._infos[info.name or get_command_name(info.callback.__name__)] = info
        for group in app.registered_groups:
            solved = solve_typer_info_defaults(group)
            if not solved.name:
                raise ValueError("a command group needs a name (add_typer(..., name=...))")
            self._infos[solved.name] = group
        self._built: dict[str, Command] = {}

    def names(self) -> list[str]:
        return list(self._infos)

    def get(self, name: str) -> Command | None:
        if name not in self._built:
            info = self._infos.get(name)
            if info is None:
                return None
            short = self._app.pretty_exceptions_short
            markup = self._app.rich_markup_mode
            built: Command
            if isinstance(info, typer.models.TyperInfo):
                built = typer.main.get_group_from_info(
                    info,
                    pretty_exceptions_short=short,
                    rich_markup_mode=markup,
                    suggest_commands=self._app.suggest_commands,
                )
            else:
                built = typer.main.get_command_from_info(
                    info, pretty_exceptions_short=short, rich_markup_mode=markup
                )
            self._built[name] = _plain_tree(built)
        return self._built[name]

    def summary(self, name: str) -> Command:
        """A stand-in with the command's name and help texts, for listing it."""
        if name in self._built:
            return self._built[name]
        info = self._infos[name]
        if isinstance(info, typer.models.TyperInfo):
            info = typer.main.solve_typer_info_defaults(info)
            help_text = info.help
        else:
            help_text = (
                inspect.cleandoc(info.help)
                if info.help is not None
                else inspect.getdoc(info.callback)
            )
        return TyperCommand(
            name=name,
            help=help_text,
            short_help=info.short_help,
            hidden=bool(info.hidden),
            deprecated=info.deprecated,
        )


def load_module_commands(module: str, package: str = "memstrata.cli") -> dict[str, Command]:
    """The click commands ``module.register(app)`` adds to an empty Typer app, all built."""
    source = _load_source(module, package)
    if source is None:
        return {}
    return {name: source.get(name) for name in source.names()}


def _load_source(module: str, package: str = "memstrata.cli") -> _Source | None:
    """What ``module.register(app)`` adds to an empty Typer app (nothing built yet).

    A module absent from the install (e.g. a build without ``memstrata.bench``) contributes
    nothing; any other import error is raised."""
    from importlib.util import resolve_name

    try:
        register = import_module(module, package).register
    except ModuleNotFoundError as exc:
        if exc.name != resolve_name(module, package):
            raise  # the module is there but one of its imports is not: a real error
        return None
    sub = typer.Typer(rich_markup_mode=None, add_completion=False)
    register(sub)
    return _Source(sub)


class LazyCommands(MutableMapping[str, Command]):
    """``name -> command``: commands typer built, the group's own commands, then each
    module's; built on demand."""

    def __init__(
        self,
        built: Mapping[str, Command],
        own: typer.Typer | None,
        modules: Mapping[str, tuple[str, ...]],
    ) -> None:
        self._extra = dict(built)  # built by typer (commands registered on the root app)
        self._own = _Source(own) if own is not None else None
        self._modules = dict(modules)  # module -> the command names it registers
        self._loaded: dict[str, _Source | None] = {}

    def _load(self, module: str) -> _Source | None:
        if module not in self._loaded:
            self._loaded[module] = _load_source(module)
        return self._loaded[module]

    def _sources(self) -> list[_Source]:
        """Own first, then every module in table order (importing them)."""
        found = [self._own] if self._own is not None else []
        return found + [s for m in self._modules if (s := self._load(m)) is not None]

    def _source_of(self, name: str) -> _Source | None:
        if self._own is not None and name in self._own.names():
            return self._own
        for module, names in self._modules.items():
            source = self._load(module) if name in names else None
            if source is not None and name in source.names():
                return source
        # a name the table does not list (yet): look everywhere
        return next((s for s in self._sources() if name in s.names()), None)

    def names(self) -> list[str]:
        """Every command name, in order, without building any command."""
        out = list(self._extra)
        for source in self._sources():
            out += [n for n in source.names() if n not in out]
        return out

    def summary(self, name: str) -> Command | None:
        """The command, or a stand-in with its help texts when it is not built yet."""
        if name in self._extra:
            return self._extra[name]
        source = self._source_of(name)
        return source.summary(name) if source is not None else None

    def __getitem__(self, name: str) -> Command:
        if name in self._extra:
            return self._extra[name]
        source = self._source_of(name)
        found = source.get(name) if source is not None else None
        if found is None:
            raise KeyError(name)
        return found

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._extra or self._source_of(name) is not None)

    def __setitem__(self, name: str, command: Command) -> None:
        self._extra[name] = command

    def __delitem__(self, name: str) -> None:
        raise TypeError("commands cannot be removed from the memstrata CLI")

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())


class LazyGroup(TyperGroup):
    """A root group whose commands are built when named.

    Subclass it with ``own`` (a Typer app whose ``@own.command()`` functions are this
    group's commands) and ``modules`` (a module, relative to ``memstrata.cli`` -> the
    command names its ``register(app)`` adds)."""

    own: typer.Typer | None = None
    modules: Mapping[str, tuple[str, ...]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        _plain_params(self)
        self.commands: LazyCommands = LazyCommands(self.commands, self.own, self.modules)

    def list_commands(self, ctx: Any) -> list[str]:
        return self.commands.names()

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """TyperGroup's listing, from each command's help texts: nothing is built."""
        rows = [
            (name, cmd)
            for name in self.list_commands(ctx)
            if (cmd := self.commands.summary(name)) is not None and not cmd.hidden
        ]
        if not rows:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in rows)
        from gettext import gettext as _

        with formatter.section(_("Commands")):
            formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])
