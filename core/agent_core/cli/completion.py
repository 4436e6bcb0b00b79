"""``agent-core completion bash|zsh``: a completion script for the shell, made from the parser itself.

The words come from :func:`~agent_core.cli.build_parser` when the script is printed, so a
new command or flag completes without anyone editing a script; ``--provider`` completes
the providers installed at that moment. zsh runs the same function through its
``bashcompinit`` layer. Anything else (a prompt, a path) falls back to file names.

    eval "$(agent-core completion bash)"      # in ~/.bashrc
    eval "$(agent-core completion zsh)"       # in ~/.zshrc
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

__all__ = ["add_completion", "script"]

_FUNCTION = """\
_agent_core() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path="" i word
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        case $word in -*) ;; *) [[ " $(_agent_core_words "$path") " == *" $word "* ]] && path="${path:+$path }$word" ;; esac
    done
    if [[ $prev == --provider ]]; then
        COMPREPLY=($(compgen -W %(providers)s -- "$cur"))
        return
    fi
    COMPREPLY=($(compgen -W "$(_agent_core_words "$path")" -- "$cur"))
}
_agent_core_words() {
    case $1 in
%(cases)s
    esac
}
complete -o default -F _agent_core agent-core
"""


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _cases(parser: argparse.ArgumentParser, path: str = "") -> list[str]:
    """One ``case`` arm per command path: its subcommands, a positional's choices, and its flags."""
    children = _subparsers(parser)
    flags = sorted(flag for action in parser._actions for flag in action.option_strings if flag.startswith("--"))
    choices = [str(c) for action in parser._actions if not action.option_strings and action.choices
               and not isinstance(action, argparse._SubParsersAction) for c in action.choices]
    words = " ".join([*children, *choices, *flags])
    arms = [f"        {shlex.quote(path)}) echo {shlex.quote(words)} ;;"]
    for name, child in children.items():
        arms += _cases(child, f"{path} {name}".strip())
    return arms


def script(shell: str, parser: argparse.ArgumentParser, providers: list[str]) -> str:
    """The completion script for ``shell`` (``bash`` or ``zsh``)."""
    body = _FUNCTION % {"providers": shlex.quote(" ".join(providers)), "cases": "\n".join(_cases(parser))}
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body


def _completion(args: argparse.Namespace) -> int:
    from ..engine.core import AgentCore
    from . import build_parser

    providers = list(AgentCore.discover(keep_going=True).plugins("provider"))
    print(script(args.shell, build_parser(), providers), end="")
    return 0


def add_completion(sub: Any) -> None:
    from . import add_command

    completion = add_command(
        sub, "completion", help="print a shell completion script (bash or zsh)",
        examples=(('eval "$(agent-core completion bash)"', "in ~/.bashrc"),
                  ('eval "$(agent-core completion zsh)"', "in ~/.zshrc")))
    completion.add_argument("shell", choices=("bash", "zsh"), help="the shell to complete in")
    completion.set_defaults(func=_completion)
