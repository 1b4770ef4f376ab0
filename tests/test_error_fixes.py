"""Every ``fix=`` of an error in the package that names a rolecall command names one that
exists, with options it has (#48 item 6: a fix once sent people to 'rolecall dialogues
examples', which does not exist). The fixes are read from the source (every call with a
``fix`` keyword; an f-string's placeholders read as X), the commands from the CLI itself."""

from __future__ import annotations

import ast
import re

import typer

from rolecall.cli.app import app
from tests.paths import REPO

MENTION = re.compile(r"rolecall ([a-z][a-z-]*)(?: ([a-z][a-z-]*))?([^'\"|;,)]*)")


def text_of(node: ast.AST) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    if isinstance(node, ast.BinOp):
        return text_of(node.left) + text_of(node.right)
    if isinstance(node, ast.IfExp):
        return text_of(node.body) + " | " + text_of(node.orelse)
    return ""


def fixes():
    for path in sorted((REPO / "src" / "rolecall").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                for keyword in node.keywords:
                    if keyword.arg == "fix":
                        yield f"{path.relative_to(REPO)}:{node.lineno}", text_of(keyword.value)


def wrong_mentions(text: str, root) -> list[str]:
    """What a fix's text names that the CLI lacks: a subcommand of a group, or an option
    of the command it names (a first word that is no command is prose: "the rolecall
    version")."""
    wrong = []
    for match in MENTION.finditer(text):
        first, second, rest = match.groups()
        command = root.commands.get(first)
        if command is None:
            continue
        subcommands = getattr(command, "commands", None)
        if subcommands is not None:
            if second is None:
                continue  # the group as a family: 'the directory rolecall train wrote'
            if second not in subcommands:
                wrong.append(match.group(0))
                continue
            command = subcommands[second]
        else:
            rest = f" {second or ''}{rest}"
        options = {o for p in command.params for o in [*p.opts, *getattr(p, "secondary_opts", [])]}
        wrong += [f"{match.group(0)} ({o})" for o in re.findall(r"--[a-z][a-z-]*", rest)
                  if o not in options]  # fmt: skip
    return wrong


def test_every_fix_names_commands_and_options_that_exist():
    root = typer.main.get_command(app)
    found = list(fixes())
    assert len(found) > 300  # the walk reads the package's fixes
    wrong = [f"{where}: {w}" for where, text in found for w in wrong_mentions(text, root)]
    assert not wrong, "\n".join(wrong)


def test_the_walk_catches_a_command_that_does_not_exist():
    root = typer.main.get_command(app)
    assert wrong_mentions("make examples with 'rolecall dialogues examples'", root)
    assert wrong_mentions("rolecall bot check DIR --no-such-option", root)
    assert not wrong_mentions("rolecall bot check runs/demo/bot --out runs/x", root)
    assert not wrong_mentions("point at the directory that 'rolecall train' wrote", root)
