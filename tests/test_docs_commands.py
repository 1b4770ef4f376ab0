"""Every ``rolecall`` command written in a fenced block of README.md and docs/ names a
command that exists, with options it has and no more arguments than it takes (#48 item
2: the README's web-app sequence once failed as written). Continued lines are joined,
comments, redirections and ``[optional]`` parts dropped, ``$VAR`` and ``$(...)`` read
as words; placeholders in capitals (BOT.yaml, DIR) are
words like any other. The README's People-in-the-loop block is also run for real on the
demo's bot (tests/integration/test_demo.py)."""

from __future__ import annotations

import re
import shlex

import typer

from rolecall.cli.app import app
from tests.paths import REPO

FENCE = re.compile(r"```(?:bash|sh|console)?\n(.*?)```", re.S)
HELP_ONLY = {"--help", "--version"}


def documented_commands():
    for path in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for block in FENCE.findall(text):
            joined = re.sub(r"\\\n\s*", " ", block)
            for line in joined.splitlines():
                line = re.sub(r"\s#.*$", "", line).strip()
                line = re.sub(r"\$\([^)]*\)", "X", line)  # $(basename $bot): one word
                line = re.sub(r"\s\[[^\]]*\]", "", line)  # [--until A|B]: optional, shown
                line = re.split(r"\s>>?\s", line)[0]  # > file: the shell's, not ours
                for part in re.split(r"\s(?:&&|;|\|)\s", line):
                    words = part.split()
                    if words and words[0] in ("rolecall", ".venv/bin/rolecall"):
                        yield f"{path.relative_to(REPO)}: {part}", part


def problems(line: str, root) -> list[str]:
    try:
        words = shlex.split(line)[1:]
    except ValueError as exc:
        return [f"cannot split: {exc}"]
    command, path = root, []
    while getattr(command, "commands", None) and words and not words[0].startswith("-"):
        if words[0] not in command.commands:
            return [f"no command '{' '.join([*path, words[0]])}'"]
        path.append(words[0])
        command = command.commands[words.pop(0)]
    if getattr(command, "commands", None):
        return [] if set(words) <= HELP_ONLY else [f"'{' '.join(path)}' needs a subcommand"]
    options = {o: p for p in command.params for o in [*p.opts, *getattr(p, "secondary_opts", [])]}
    found, positional, i = [], 0, 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and word != "-":
            name = word.split("=", 1)[0]
            parameter = options.get(name)
            if parameter is None and name not in HELP_ONLY:
                found.append(f"'{' '.join(path)}' has no option {name}")
            elif parameter is not None and not parameter.is_flag and "=" not in word:
                i += 1  # its value
        else:
            positional += 1
        i += 1
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    takes = sum(10**6 if p.nargs == -1 else p.nargs for p in arguments)
    if positional > takes:
        found.append(f"'{' '.join(path)}' takes {takes} arguments, given {positional}")
    return found


def test_every_documented_command_exists_with_its_options():
    root = typer.main.get_command(app)
    commands = list(documented_commands())
    assert len(commands) > 80  # README and docs hold the commands a user copies
    wrong = [f"{where}\n    {p}" for where, line in commands for p in problems(line, root)]
    assert not wrong, "\n".join(wrong)


def test_the_check_catches_what_breaks_as_written():
    root = typer.main.get_command(app)
    assert problems("rolecall dialogues examples x", root) == ["no command 'dialogues examples'"]
    assert problems("rolecall bot check runs/demo/bot --nope", root)
    assert problems("rolecall web add-member", root) == []  # missing arguments: not judged
    assert problems("rolecall web export p --out x.jsonl", root) == []
    assert problems("rolecall web add-user a b c", root)  # one argument only
