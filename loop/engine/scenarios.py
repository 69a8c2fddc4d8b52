"""How the offline scripted model plays each task: the scenarios' scripts, the sub-agents', a free-form
task's, and the summary it writes when the loop compacts.

A play reads only what a request holds: the task (the first user message) picks
it, and the `tool_result`s written back so far decide the next move. Its final
answers quote what the tools really printed. The Messages API around the plays
(checking a request, errors, streaming) is in `scripted.py`.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from typing import Callable

from . import rules
from ..text.catalogs import N_, languages, say, say_n
from .compact import is_summary
from .language import asked_for
from .waits import scale


@dataclass(frozen=True)
class Scenario:
    """A built-in task and how the scripted model plays it.

    `task` and `about` are English messages (marked with N_); the task is sent in
    the run's language (`task_in`), and the model answers in the language whose
    task it was given. `creates` names the files the task asks for: any other
    change to the workspace would be the model making things up.
    """

    name: str
    task: str
    about: str
    # (results so far: the tool_result blocks written back, in order; the language) -> the next reply
    play: Callable[[list[dict], str], "Reply"]
    max_tokens: int = 8000
    creates: tuple[str, ...] = ()
    toolset: str | None = None  # the tools it needs (None: any toolset)
    compact_at: int | None = None  # its auto-compact threshold, with toolset s06
    profile: str | None = None  # the loop profile it is made to show (None: the minimal loop, the default)
    context_window: int | None = None  # tokens a request may hold: the API refuses a longer prompt (400)
    pace: float = 0.0  # seconds the model takes to write each block of an answer (streamed, block by block; scaled)

    def task_in(self, lang: str) -> str:
        return say(lang, self.task)


@dataclass(frozen=True)
class Reply:
    text: str = ""
    commands: tuple[str, ...] = ()  # bash commands, one tool_use each
    calls: tuple[tuple[str, dict], ...] = ()  # other tool_use blocks: (tool name, input), after the commands
    error: tuple[int, str, str] | None = None  # (HTTP status, error type, message): the API fails the call instead


class Seen(list):
    """The tool_results written back so far, in order (a list, as every play reads it), and the summary a
    compaction left at the start of the history, if any: after a compaction that is all the model knows.
    `retry` is how many times this very request was tried before (the SDK's retry header)."""

    summary: str = ""
    retry: int = 0


def _out(result: dict) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


NO_OUTPUT = "(no output)"  # what the bash tool writes back for a command that printed nothing


def _lines(result: dict) -> list[str]:
    """The lines a tool printed (none when it printed nothing)."""
    out = _out(result)
    return [] if out.strip() == NO_OUTPUT else [line for line in out.splitlines() if line.strip()]


def _quote(text: str, lang: str, limit: int = 12) -> str:
    """A tool's output quoted as it is, its first `limit` lines: an indented code block, blank lines around it."""
    lines = text.splitlines()
    shown = "\n".join(f"    {line}" for line in lines[:limit])
    more = "\n    " + say_n(lang, "… and {n} more line", "… and {n} more lines", len(lines) - limit) \
        if len(lines) > limit else ""
    return "\n" + shown + more + "\n"


def _names(results: list[dict]) -> list[str]:
    """The entries a listing showed: the name field of `ls -l`'s lines (a name may hold spaces), or a plain
    listing's lines as they are; without `total`, `.` and `..`."""
    entries = []
    for line in _lines(results[-1]):
        fields = line.split(None, 8)
        if line.startswith("total ") and len(fields) == 2:
            continue
        entries.append(fields[-1] if len(fields) == 9 else line.strip())
    return [e for e in entries if e not in (".", "..")]


def _list_files(results: list[dict], lang: str) -> Reply:
    if not results:
        return Reply(say(lang, "I'll look at what is in the workspace."), ("ls -la",))
    if results[-1].get("is_error"):
        return Reply(say(lang, "`ls` failed:") + "\n" + _quote(_out(results[-1]), lang))
    entries = _names(results)
    if not entries:
        return Reply(say(lang, "The workspace is empty: `ls -la` listed only `.` and `..`."))
    return Reply(say_n(lang, "The workspace holds {n} entry: {names}.", "The workspace holds {n} entries: {names}.",
                       len(entries), names=", ".join(f"`{e}`" for e in entries)))


HELLO = "print('Hello from the agent loop!')"


def _hello_py(results: list[dict], lang: str) -> Reply:
    if not results:
        return Reply(say(lang, "I'll create hello.py first."),
                     (f"printf '%s\\n' \"{HELLO}\" > hello.py && cat hello.py",))
    if len(results) == 1:
        if results[0].get("is_error"):
            return Reply(say(lang, "Writing hello.py failed:") + "\n" + _quote(_out(results[0]), lang))
        return Reply(say(lang, "hello.py is written. Now I'll run it."), ("python3 hello.py",))
    run = results[-1]
    if run.get("is_error"):
        return Reply(say(lang, "Running hello.py failed; Python said:") + "\n" + _quote(_out(run), lang))
    return Reply(say(lang, "I created hello.py and ran it with `python3 hello.py`. It printed:") + "\n"
                 + _quote(_out(run), lang))


FIND_NOTES = "find . -name notes.txt -type f"


def _recover(results: list[dict], lang: str) -> Reply:
    """Count notes.txt; when it is not there, look for it and count what was found, or say it does not exist.

    The answer uses only what the tools printed: the model never writes the
    file it was asked about, so it cannot report lines it made up itself.
    """
    if not results:
        return Reply(say(lang, "I'll count the lines of notes.txt."), ("wc -l notes.txt",))
    last = results[-1]
    if len(results) == 1 and last.get("is_error"):
        return Reply(say(lang, "That failed:") + "\n" + _quote(_out(last), lang) + "\n"
                     + say(lang, "There is no notes.txt here. I will not guess what it holds: "
                                 "I'll look for it elsewhere in the workspace."),
                     (FIND_NOTES,))
    if len(results) == 2 and not last.get("is_error"):  # what find printed: the files that really exist
        found = _lines(last)
        if not found:
            return Reply(say(lang, "notes.txt does not exist in this workspace: `wc -l notes.txt` failed and "
                                   "`{find}` found nothing. So I cannot tell how many lines it has, and I have "
                                   "not created one: its lines would be made up. If the file has another name "
                                   "or is somewhere else, tell me where.", find=FIND_NOTES))
        return Reply(say(lang, "`find` found it:") + "\n" + _quote(_out(last), lang) + "\n"
                     + say(lang, "I'll count the lines of what it found."),
                     ("wc -l -- " + " ".join(shlex.quote(path) for path in found),))
    if last.get("is_error"):
        return Reply(say(lang, "It failed again, so I'll stop here. The error was:") + "\n"
                     + _quote(_out(last), lang))
    counted = _out(last).strip()
    words = counted.split()
    if len(_lines(last)) == 1 and words and words[0].isdigit():
        where = " ".join(words[1:])
        return Reply(say_n(lang, "{file} has {n} line (`wc -l` printed `{out}`).",
                           "{file} has {n} lines (`wc -l` printed `{out}`).", int(words[0]),
                           file=where, out=counted))
    return Reply(say(lang, "`wc -l` counted them:") + "\n" + _quote(counted, lang))


def _two_tools(results: list[dict], lang: str) -> Reply:
    if not results:
        return Reply(say(lang, "I'll ask for both at once."), ("date -u '+%Y-%m-%d %H:%M UTC'", "du -sh ."))
    date, size = (_out(r).strip() for r in results[-2:]) if len(results) >= 2 else (_out(results[0]), "?")
    return Reply(say(lang, "Two tool calls in one turn, answered by one message with two tool_results:") + "\n"
                 + say(lang, "- the date is {date}", date=date) + "\n"
                 + say(lang, "- the workspace uses {size}", size=size.split()[0] if size.split() else size))


ESSAY = N_(
    "Here is everything the loop did, stage by stage. First, the request went into messages as a user "
    "message. Second, the model was called with the system prompt, the messages, the tools and max_tokens. "
    "Third, the assistant's response was appended to messages itself, because the next turn needs it. "
    "Fourth, the stop_reason was read: tool_use meant running each tool_use block and collecting a "
    "tool_result for it. Fifth, the results went back as one user message, and the model was called again. "
)


def _max_tokens(results: list[dict], lang: str) -> Reply:
    if not results:
        return Reply(say(lang, "I'll look at the workspace first."), ("ls -la",))
    entries = len([line for line in _lines(results[-1]) if not line.startswith("total")])
    return Reply(say_n(lang, "`ls -la` listed {n} line.", "`ls -la` listed {n} lines.", entries) + " "
                 + say(lang, ESSAY) * 4)


# Free-form tasks: the scripted model cannot understand them, so it picks a safe,
# read-only command whose topic matches a word of the task and says so.
FREE_COMMANDS = [
    (("ls", "list", "files", "ファイル", "文件"), "ls -la"),
    (("python", "version", "バージョン", "版本"), "python3 --version"),
    (("date", "time", "day", "clock", "日付", "時間", "时间", "日期", "今日", "今天"), "date -u"),
    (("disk", "size", "space", "usage", "容量", "磁盘", "ディスク"), "du -sh ."),
    (("who", "user", "whoami", "ユーザー", "用户"), "whoami"),
    (("count", "lines", "wc", "行数"), "wc -l * 2>/dev/null || echo 'no files to count'"),
    (("where", "directory", "folder", "pwd", "path", "フォルダ", "ディレクトリ", "目录", "文件夹"), "pwd"),
    (("system", "kernel", "os", "uname", "machine", "システム", "系统"), "uname -a"),
]
FALLBACK = "ls -la"


def free_command(task: str) -> str:
    """The safe read-only command the scripted model picks for a free-form task."""
    words = set(re.findall(r"\w+", task.lower()))
    for keys, command in FREE_COMMANDS:
        if words & set(keys) or any(k in task for k in keys if not k.isascii()):
            return command
    return FALLBACK


def _free_form(task: str) -> Callable[[list[dict], str], Reply]:
    command = free_command(task)
    matched = command != FALLBACK or bool(set(re.findall(r"\w+", task.lower())) & {"ls", "list", "files"})

    def play(results: list[dict], lang: str) -> Reply:
        if not results:
            why = (say(lang, "I'll run `{command}`, a safe read-only command that matches a word of your task.",
                       command=command) if matched else
                   say(lang, "No word of your task matches one of my commands, so I'll list the workspace with "
                             "`{command}`.", command=command))
            return Reply(say(lang, "I am Loopscope's offline scripted model.") + " " + why, (command,))
        verdict = say(lang, "It failed:") if results[-1].get("is_error") else say(lang, "It printed:")
        return Reply(
            say(lang, "I ran `{command}`.", command=command) + " " + verdict + "\n"
            + _quote(_out(results[-1]), lang) + "\n\n"
            + say(lang, "I am the offline scripted model: I cannot read a free-form task, only match a few words "
                        "of it to a safe command. For a real answer, choose an Anthropic model and give an API key "
                        "(sidebar, or ANTHROPIC_API_KEY).")
        )

    return play


# -- s04: a sub-agent searches, the parent answers from its summary only --
PROJECT = ("mkdir -p src docs && printf 'def add(a, b):\\n    return a + b\\n' > src/maths.py && "
           "printf 'def greet(name):\\n    return f\"Hello, {name}!\"\\n' > src/people.py && "
           "printf '# Notes\\nThe greeting is somewhere in src.\\n' > docs/notes.md && ls -R")
CHILD_PROMPT = N_("Find which file under src/ defines the function greet, and what it returns. Search with "
                  "commands, read the file, then answer with the path, the line and the return value.")
SEARCH = "grep -rn 'def greet' ."


def _subagent(results: list[dict], lang: str) -> Reply:
    if not results:
        return Reply(say(lang, "First I'll write a small project to search."), (PROJECT,))
    if len(results) == 1:
        if results[0].get("is_error"):
            return Reply(say(lang, "Writing the project failed:") + "\n" + _quote(_out(results[0]), lang))
        return Reply(say(lang, "Now I'll delegate the search to a subagent. It starts with a fresh history; only "
                               "its final answer will come back to me."),
                     calls=(("task", {"prompt": say(lang, CHILD_PROMPT),
                                      "description": say(lang, "find where greet is defined")}),))
    answer = results[-1]
    if answer.get("is_error"):
        return Reply(say(lang, "The subagent could not do it:") + "\n" + _quote(_out(answer), lang))
    return Reply(say(lang, "The subagent answered:") + "\n" + _quote(_out(answer), lang) + "\n"
                 + say(lang, "That summary is all I saw of its work: its commands and the file it read stayed in "
                             "its own messages, not in mine."))


def _search(results: list[dict], lang: str) -> Reply:
    """The sub-agent's own loop: grep, read the file grep found, answer."""
    if not results:
        return Reply(say(lang, "I'll search the workspace for the definition."), (SEARCH,))
    found = re.search(r"^\.?/?(\S+?):(\d+):", _out(results[0]), re.M)
    if found is None:
        return Reply(say(lang, "I could not find greet; grep printed:") + "\n" + _quote(_out(results[0]), lang))
    path, line = found.group(1), found.group(2)
    if len(results) == 1:
        return Reply(say(lang, "grep found it in {path}, line {line}. I'll read the file.", path=path, line=line),
                     calls=(("read_file", {"path": path}),))
    returns = next((ln.strip()[len("return "):] for ln in _lines(results[1]) if ln.strip().startswith("return ")),
                   None)
    if results[1].get("is_error") or returns is None:
        return Reply(say(lang, "greet is defined in {path}, line {line}, but reading it failed:", path=path,
                         line=line) + "\n" + _quote(_out(results[1]), lang))
    return Reply(say(lang, "greet is defined in `{path}` at line {line}. It returns `{returns}`.", path=path,
                     line=line, returns=returns))


# -- s06: reads files until micro-compact, then auto-compact, happen; finishes from the summary --
PARTS = 5
MAKE_PARTS = ("for i in 1 2 3 4 5; do for j in $(seq 1 16); do "
              "echo \"part $i, line $j: the loop calls the model, runs each tool, writes the results back.\"; "
              "done > part$i.txt; done; echo 'part 5, line 17: a falcon circles over the loop.' >> part5.txt; ls -l")
NO_FALCON = N_("{name} does not mention the falcon.")


def _part_read(result: dict) -> int | None:
    found = re.match(r"\s*(?:\d+\s+)?part (\d+), line", _out(result))
    return int(found.group(1)) if found else None


def _said_no_falcon(text: str, lang: str) -> set[int]:
    """The parts the model said had no falcon, in `text` (a summary of its earlier turns)."""
    pattern = re.escape(say(lang, NO_FALCON)).replace(re.escape("{name}"), r"part(\d+)\.txt")
    return {int(n) for n in re.findall(pattern, text)}


def _part_search(make: str, parts: int, first: str) -> Callable[[list[dict], str], Reply]:
    """Write `parts` files with `make`, then read them one by one until one mentions the falcon (compaction's
    scenarios: the history grows a file a turn). `first` is what the model says before writing them."""

    def play(results: list[dict], lang: str) -> Reply:
        return _falcon(results, lang, make, parts, first)

    return play


def _falcon(results: list[dict], lang: str, make: str = "", parts: int = 0, first: str = "") -> Reply:
    summary = getattr(results, "summary", "")
    known = _said_no_falcon(summary, lang)
    if not results and not summary:
        return Reply(say(lang, first), (make,))
    newest = _newest_in(summary, lang)
    if newest and _part_read({"content": newest}) and "falcon" not in newest:  # the part read last, before it
        known.add(_part_read({"content": newest}))
    last = results[-1] if results else {"type": "tool_result", "content": newest} if newest else None
    said = ""
    if last is not None and _part_read(last):
        n = _part_read(last)
        line = next((ln for ln in _lines(last) if "falcon" in ln), None)
        if line:
            text = say(lang, "{name} mentions the falcon:", name=f"part{n}.txt") + "\n" + _quote(line.strip(), lang)
            if known:
                text += "\n" + say(lang, "My history was compacted on the way: I know that {parts} had no falcon "
                                         "only from the summary it left.",
                                   parts=", ".join(f"part{k}.txt" for k in sorted(known)))
            return Reply(text)
        known.add(n)
        said = say(lang, NO_FALCON, name=f"part{n}.txt") + " "
    elif last is not None and last.get("is_error"):
        return Reply(say(lang, "That failed, so I stop here:") + "\n" + _quote(_out(last), lang))
    known |= {n for n in (_part_read(r) for r in results[:-1]) if n}
    left = [n for n in range(1, parts + 1) if n not in known]
    if not left:
        return Reply(said + say(lang, "No part mentions the falcon."))
    name = f"part{left[0]}.txt"
    return Reply(said + say(lang, "Next, {name}.", name=name), calls=(("read_file", {"path": name}),))



# -- the complete loop's scenarios: each shows one row of the chapter's table, and where the minimal loop stops --
OVERLOADED_TIMES = 3  # the first call is answered 529 this many times, then it succeeds
OVERLOADED = (529, "overloaded_error", "Overloaded")  # status, type and message as the API sends them


def _overloaded(results: list[dict], lang: str) -> Reply:
    if not results and getattr(results, "retry", 0) < OVERLOADED_TIMES:
        return Reply(error=OVERLOADED)
    if not results:
        return Reply(say(lang, "I'll ask the system for today's date."), ("date -u +%Y-%m-%d",))
    if results[-1].get("is_error"):
        return Reply(say(lang, "`date` failed:") + "\n" + _quote(_out(results[-1]), lang))
    return Reply(say(lang, "Today's date (UTC) is {date}: `date -u` printed it.", date=_out(results[-1]).strip()))


LOG_LINES = 60
WRITE_LOG = (f"for i in $(seq 1 {LOG_LINES}); do "
             "echo \"turn $i: call the model, append its answer, run each tool_use, write the results back\"; "
             "done > loop.log && cat loop.log")


def _long_answer(results: list[dict], lang: str) -> Reply:
    """An answer longer than max_tokens: the whole log, quoted line by line (cut twice on the way)."""
    if not results:
        return Reply(say(lang, "I'll write loop.log, then show you all of it."), (WRITE_LOG,))
    if results[-1].get("is_error"):
        return Reply(say(lang, "Writing loop.log failed:") + "\n" + _quote(_out(results[-1]), lang))
    lines = _lines(results[-1])
    return Reply(say_n(lang, "loop.log has {n} line; here it is, all of it:", "loop.log has {n} lines; here it is, all "
                       "of it:", len(lines)) + "\n" + _quote(_out(results[-1]), lang, limit=len(lines)))


BIG_PARTS = 6
MAKE_BIG_PARTS = ("for i in 1 2 3 4 5 6; do for j in $(seq 1 20); do "
                  "echo \"part $i, line $j: the loop calls the model, runs each tool, writes the results back.\"; "
                  "done > part$i.txt; done; echo 'part 6, line 21: a falcon circles over the loop.' >> part6.txt; ls -l")
# The slowest first: started early, it is the one whose head start saves the most. Each waits so many seconds.
SLOW_CHECKS = ((2, "ls /usr/bin | wc -l"), (1.5, "uname -sr"), (1, "date -u +%Y-%m-%d"))


def checks() -> tuple[str, ...]:
    """The `parallel` scenario's commands: `sleep 2 && ls /usr/bin | wc -l`, ...; their waits scaled in tests
    (waits.py), as the retry waits are."""
    return tuple(f"sleep {seconds * scale():g} && {command}" for seconds, command in SLOW_CHECKS)


def _parallel(results: list[dict], lang: str) -> Reply:
    if not results:
        return Reply(say(lang, "Three slow read-only checks, asked for at once: each waits a second or two first."),
                     checks())
    if len(results) < len(SLOW_CHECKS) or any(r.get("is_error") for r in results[-len(SLOW_CHECKS):]):
        return Reply(say(lang, "A check failed:") + "\n" + _quote(_out(results[-1]), lang))
    programs, kernel, date = (_out(r).strip() for r in results[-len(SLOW_CHECKS):])
    return Reply(say(lang, "The three checks are back:") + "\n"
                 + say(lang, "- programs in /usr/bin: {n}", n=programs) + "\n"
                 + say(lang, "- the kernel: {kernel}", kernel=kernel) + "\n"
                 + say(lang, "- the date (UTC): {date}", date=date))


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    Scenario("list-files", N_("List the files in the workspace."),
             N_("one tool call, then an answer built from its output"), _list_files),
    Scenario("hello-py", N_("Create hello.py that prints a greeting, then run it."),
             N_("two turns: write a file, run it, report what it printed"), _hello_py, creates=("hello.py",)),
    Scenario("recover", N_("How many lines does notes.txt have?"),
             N_("a command fails; the model reads the error, looks for the file, and reports only what it found"), _recover),
    Scenario("two-tools", N_("What is the date, and how much disk does the workspace use?"),
             N_("two tool_use blocks in one response, answered by one user message"), _two_tools),
    Scenario("max-tokens", N_("Look at the workspace, then explain the agent loop in full detail."),
             N_("the answer is cut by max_tokens: the loop ends there and says so"), _max_tokens, max_tokens=120),
    Scenario("subagent", N_("Which file in src/ defines greet, and what does it return? Delegate the search to a "
                            "subagent."),
             N_("s04: a task tool_use runs a sub-agent's loop with fresh messages; only its answer comes back"),
             _subagent, toolset="s04", creates=("src/maths.py", "src/people.py", "docs/notes.md")),
    Scenario("compact", N_("Read part1.txt to part5.txt one by one (write them first) and tell me which one mentions "
                           "the falcon."),
             N_("s06: old tool_results are micro-compacted, then the history is summarised; the loop goes on from "
                "the summary"), _part_search(MAKE_PARTS, PARTS, N_("I'll write the five parts first.")),
             toolset="s06", compact_at=2100, creates=tuple(f"part{n}.txt" for n in range(1, PARTS + 1))),
    Scenario("overloaded", N_("What is today's date?"),
             N_("complete loop: the API answers 529 overloaded three times; the loop waits, retries, and goes on"),
             _overloaded, profile="complete"),
    Scenario("long-answer", N_("Write a log of 60 turns to loop.log, then show me all of it."),
             N_("complete loop: the answer is cut at max_tokens twice; the loop asks the model to continue"),
             _long_answer, max_tokens=550, profile="complete", creates=("loop.log",)),
    Scenario("big-context", N_("Read part1.txt to part6.txt one by one (write them first) and tell me which one "
                               "mentions the falcon."),
             N_("complete loop: the history outgrows a small context window; refused as too long, the loop compacts "
                "and resumes"), _part_search(MAKE_BIG_PARTS, BIG_PARTS, N_("I'll write the six long parts first.")),
             toolset="s02", profile="complete", context_window=1800,
             creates=tuple(f"part{n}.txt" for n in range(1, BIG_PARTS + 1))),
    Scenario("parallel", N_("Run three slow checks: how many programs are in /usr/bin, the kernel, and today's date."),
             N_("complete loop: three slow read-only commands run at once; the wall time is the slowest, not the sum"),
             _parallel, profile="complete", pace=0.4),
]}
CHILDREN = {CHILD_PROMPT: _search}  # the sub-agents' tasks the scripted model knows (English messages)


def find_child(task: str) -> tuple[Callable[[list[dict], str], Reply], str] | None:
    """(how the sub-agent given this task plays, in which language), or None."""
    for prompt, play in CHILDREN.items():
        for lang in languages():
            if say(lang, prompt) == task:
                return play, lang
    return None


def find_scenario(task: str) -> tuple[Scenario, str] | None:
    """(the built-in scenario whose task this is, in which language), or None for a free-form task."""
    for scenario in SCENARIOS.values():
        for lang in languages():
            if scenario.task_in(lang) == task:
                return scenario, lang
    return None


def scenario_for_task(task: str) -> Scenario | None:
    found = find_scenario(task)
    return found[0] if found else None


def language_of(system: object, task: str) -> str:
    """The language to answer in: the one the system prompt asks for, else the task's, else English."""
    asked = asked_for(system)
    if asked:
        return asked
    found = find_scenario(task) or find_child(task)
    return found[1] if found else "en"


REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)


def first_text(messages: list) -> str:
    """The person's words in the first message: the task (or, after a compaction, the summary that stands for it).

    A harness wraps its own text around the task (Claude Code's `<system-reminder>` blocks, `role: "system"`
    messages among the messages): that is not the person's, and is left out.
    """
    first = next((m for m in messages if not (isinstance(m, dict) and m.get("role") == "system")), None) \
        if messages else None
    if not isinstance(first, dict):
        return ""
    parts = []
    for block in rules.blocks(first):
        if isinstance(block, dict) and block.get("type") == "text":
            text = str(block.get("text", ""))
            if "<system-reminder>" in text:
                text = REMINDER.sub("", text).strip()
                if not text:
                    continue
            parts.append(text)
    return "\n".join(parts)


def play_for(task: str) -> Callable[[list[dict], str], Reply]:
    """How the scripted model plays `task`: a scenario's script, a sub-agent's, or a free-form task's."""
    scenario = scenario_for_task(task)
    child = None if scenario else find_child(task)
    return scenario.play if scenario else child[0] if child else _free_form(task)


LATEST_CHARS = 2000
TASK_LABEL = N_("Task:")
DONE_LABEL = N_("What was done:")
SAID = N_("- said: {said}")
USED = N_("- used {tool}: {input}")
NOTHING_YET = N_("- nothing yet")
NEWEST = N_("Current state: {n} tool_result(s) since the last summary; the newest said:")
NOTHING_RAN = N_("Current state: no tool has run since the last summary.")
# The first summary has no summary before it: it counts from the start
NEWEST_START = N_("Current state: {n} tool_result(s) since the start; the newest said:")
NOTHING_RAN_START = N_("Current state: no tool has run since the start.")
MORE_CHARS = N_("… ({n} more characters)")


def _summary_parts(summary: str) -> tuple[str, str]:
    """(the task, its language) a summary states, in whichever language it was written; ("", "en") when none."""
    for lang in languages():
        label = say(lang, TASK_LABEL) + " "
        for line in summary.splitlines():
            if line.startswith(label):
                return line[len(label):], lang
    return "", "en"


def _newest_in(summary: str, lang: str) -> str:
    """The newest tool output a summary quotes in full ("" when none, or when it was cut short)."""
    markers = [say(lang, label, n=0).split("0")[-1].strip() for label in (NEWEST, NEWEST_START)]  # the label's end
    marker = max(markers, key=lambda m: summary.rfind(m) if m else -1) if summary else ""
    if not summary or not marker or marker not in summary:
        return ""
    newest = summary.rsplit(marker, 1)[1].removeprefix("\n")
    cut = re.escape(say(lang, MORE_CHARS, n=0)).replace("0", r"\d+")
    return "" if re.search(r"\n" + cut + "$", newest) else newest


def _input_words(tool_input: object) -> str:
    """A tool's input as a summary says it: the command itself when the input is one text (bash's
    {"command": …}), else its JSON."""
    if isinstance(tool_input, dict) and len(tool_input) == 1:
        (value,) = tool_input.values()
        if isinstance(value, str):
            return " ".join(value.split())
    return json.dumps(tool_input, ensure_ascii=False)


def summarize(conversation: str) -> str:
    """The scripted model's summary for compaction: the task, what each turn said and did, where it stands.

    It reads only what the summary call sent (the conversation's JSON, maybe cut at its start), so after a
    compaction the model knows exactly this and nothing more. It writes in the task's language.
    """
    try:
        messages = json.loads(conversation)
    except ValueError:  # cut at 80,000 characters: read what the messages' text fields still hold
        messages = [{"role": "assistant", "content": [{"type": "text", "text": t}]}
                    for t in re.findall(r'"text": "((?:[^"\\]|\\.)*)"', conversation)]
    messages = [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []
    first = first_text(messages)
    earlier = first.split("\n\n", 1)[1] if is_summary(first) and "\n\n" in first else ""
    task, lang = _summary_parts(earlier) if earlier else (first, language_of(None, first))
    done = [line for line in earlier.splitlines() if line.startswith("- ")]
    for message in messages[1:] if first else messages:
        for block in rules.blocks(message):
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and message.get("role") == "assistant" and str(block.get("text", "")).strip():
                done.append(say(lang, SAID, said=" ".join(str(block["text"]).split())))
            elif block.get("type") == "tool_use":
                done.append(say(lang, USED, tool=block.get("name"), input=_input_words(block.get("input"))))
    results = [b for m in messages for b in rules.tool_results(m)]
    if results:  # the newest result in full (a summary keeps the critical details): nobody has read it yet
        latest = _out(results[-1])
        cut = "\n" + say(lang, MORE_CHARS, n=len(latest) - LATEST_CHARS) if len(latest) > LATEST_CHARS else ""
        state = [say(lang, NEWEST if earlier else NEWEST_START, n=len(results)), latest[:LATEST_CHARS] + cut]
    else:
        state = [say(lang, NOTHING_RAN if earlier else NOTHING_RAN_START)]
    return "\n".join([f"{say(lang, TASK_LABEL)} {task}", say(lang, DONE_LABEL), *(done or [say(lang, NOTHING_YET)]),
                      *state])


def compacted(messages: list) -> tuple[str, str]:
    """(the task, the summary) of a history that begins with a compaction's summary; ("", "") otherwise."""
    first = first_text(messages)
    if not is_summary(first):
        return "", ""
    summary = first.split("\n\n", 1)[1] if "\n\n" in first else ""
    return _summary_parts(summary)[0], summary

