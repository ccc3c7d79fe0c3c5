"""Issue 11 items without a home elsewhere: packaging metadata, the library never printing,
and README statements the code must keep true."""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

from memstrata.layers.working import StepStatus, parse_step_status

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "memstrata"
README = (ROOT / "README.md").read_text(encoding="utf-8")
# Packages whose job is to talk to a terminal; everything else is library code.
TERMINAL_PACKAGES = ("cli", "bench")


def _pyproject() -> dict[str, object]:
    with (ROOT / "pyproject.toml").open("rb") as fp:
        return tomllib.load(fp)


def test_license_is_an_spdx_string_so_setuptools_does_not_warn() -> None:
    """setuptools >= 77 warns on every build about ``license = {text = ...}`` (a TOML
    table) and about ``License ::`` classifiers; an SPDX expression is the fix."""
    data = _pyproject()
    project = data["project"]
    assert isinstance(project, dict)
    assert isinstance(project["license"], str) and re.fullmatch(
        r"[A-Za-z0-9.\-+ ]+", project["license"]
    )
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]
    build = data["build-system"]
    assert isinstance(build, dict)
    requires = [r.replace(" ", "") for r in build["requires"]]
    setuptools = [r for r in requires if r.startswith("setuptools")]
    assert setuptools, requires
    minimum = re.search(r">=(\d+)", setuptools[0])
    assert minimum and int(minimum.group(1)) >= 77, setuptools  # PEP 639 support


def _library_files() -> list[Path]:
    return [p for p in SRC.rglob("*.py") if p.relative_to(SRC).parts[0] not in TERMINAL_PACKAGES]


def _prints(tree: ast.AST) -> list[int]:
    """Lines that print or write to the process's stdout/stderr."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "print"
        ):
            lines.append(node.lineno)
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr", "__stdout__", "__stderr__")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            lines.append(node.lineno)
    return lines


def test_the_library_never_prints() -> None:
    files = _library_files()
    assert len(files) > 50  # the scan sees the library
    offenders = {
        str(p.relative_to(SRC)): found
        for p in files
        if (found := _prints(ast.parse(p.read_text(encoding="utf-8"))))
    }
    assert offenders == {}, offenders


def test_the_print_scan_can_fail() -> None:
    assert _prints(ast.parse("print('x')\nimport sys\nsys.stderr.write('y')\n")) == [1, 3]
    assert _prints(ast.parse("log.info('x')\nconsole.print('y')\n")) == []


def _task_steps_bullet() -> str:
    start = README.index("- **Task steps**")
    end = README.index("\n- **", start + 1)
    return README[start:end]


def test_every_task_step_status_the_readme_names_is_accepted() -> None:
    bullet = _task_steps_bullet()
    words = [w for w in re.findall(r"`([^`]+)`", bullet) if " " not in w and w != "I"]
    assert {s.value for s in StepStatus} <= set(words), words
    for word in words:
        assert isinstance(parse_step_status(word), StepStatus), word


@pytest.mark.parametrize(
    ("interface", "command"),
    [("HTTP API", "memstrata serve"), ("MCP server", "memstrata mcp")],
)
def test_what_the_package_description_promises_exists(interface: str, command: str) -> None:
    project = _pyproject()["project"]
    assert isinstance(project, dict)
    assert interface in project["description"]
    first = README[: README.index("## Set-up")]
    assert interface in first  # "In this release: ..."
    assert f"`{command}" in README
