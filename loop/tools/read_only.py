"""Which bash commands only read: the short list whose commands may run beside others (loop/engine/parallel.py)."""

from __future__ import annotations

import shlex

# Programs that only read: the first word of every part of a command must be one of them.
READ_ONLY = frozenset({"cat", "cut", "date", "du", "echo", "file", "find", "grep", "head", "id", "ls", "pwd",
                       "sleep", "sort", "stat", "tail", "uname", "uniq", "wc", "whoami"})
WRITING_OPTIONS = {"find": ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
                            "-fls"),
                   "sort": ("-o", "--output")}
JOINS = {"&&", "||", ";", "|"}


FORBIDDEN = set("$`<>\n\\(){}")  # substitution, redirection, subshells and escapes, even inside quotes


def read_only(command: object) -> bool:
    """Is this bash command on the short read-only list: programs that only read, joined by && || ; |,
    with no redirection, substitution, variable, subshell or background job?"""
    if not isinstance(command, str) or not command.strip() or any(c in FORBIDDEN for c in command):
        return False
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        words = list(lexer)
    except ValueError:  # an unclosed quote
        return False
    part: list[str] = []
    for word in [*words, ";"]:
        if word in JOINS:
            if not part or part[0] not in READ_ONLY:
                return False
            if any(w == o or w.startswith(o + "=") for w in part[1:] for o in WRITING_OPTIONS.get(part[0], ())):
                return False
            part = []
        elif word and set(word) <= set("&|;"):  # another operator: a background job, `|&`, `;;`
            return False
        else:
            part.append(word)
    return True
