"""`python -m loop`: run, replay and check the loop from a terminal.

    python -m loop run --scenario hello-py --out t.json
    python -m loop run --scenario hello-py --lang ja     # the task, the model's words and the lines in Japanese
    python -m loop run --scenario overloaded --profile complete --journal run.jsonl   # the complete loop; jq reads the journal
    python -m loop run "What Python version is installed?" --model claude-sonnet-4-5
    python -m loop replay t.json
    python -m loop replay --follow session.jsonl       # a Claude Code log still being written: new steps as they come
    python -m loop sessions                            # ~/.claude/projects: every session, newest first
    python -m loop sessions --open 1 --out t.json      # import the newest one, with its sub-agents' logs
    python -m loop check t.json
    python -m loop quiz t.json --lang ja                # the questions asked before the steps, as JSON lines
    python -m loop break t.json --at 5 --mistake NAME --out b.json   # the loop broken from step 5 on (NAME: --help)
    python -m loop import session.jsonl --out t.json   # Claude Code, Anthropic, OpenAI, course traces
    python -m loop import session/ --out t.json        # a Claude Code session with its subagents/ logs (or a .zip)
    python -m loop yours my_loop.py --scenario recover --out t.json   # your own agent_loop, run in the sandbox
    python -m loop record --out t.json -- claude -p "List the files in this folder"   # any agent, at the wire
    python -m loop scenarios
    python -m loop serve --port 8765     # the scripted model as an Anthropic-compatible server
    python -m loop runs list             # the saved runs of every browser (runs_cli.py)
"""

from __future__ import annotations

import argparse
import sys
import time

from .engine import rules
from .engine.mistakes import MISTAKES, NAMES as MISTAKE_NAMES
from .engine.profiles import ABOUT, PROFILES
from .engine.scenarios import SCENARIOS
from .engine.scripted import SCRIPTED
from .engine.toolsets import TOOLSETS
from .files import journal, runs, transcript
from .text.catalogs import N_, known, languages, say, size_words
from .text.terminal import printable
from .views.narrate import describe

# The SDK (about a second to import) is loaded by the commands that call a model (run, serve), not by replay,
# check, import, scenarios or runs.


def out(*parts: object, file=None, flush: bool = False) -> None:
    """print(), with control characters from files, models and commands shown, not obeyed (terminal.py)."""
    print(*(printable(p) for p in parts), file=file or sys.stdout, flush=flush)


# A run the command line writes is bounded as a saved run is (loop/files/runs.py): the journal grows with the run.
JOURNAL_FULL = N_("the journal {path} has reached the size a run may hold ({size}, {variable}): the run stops here; "
                  "every step before this one is in it")
OUT_TOO_LARGE = N_("the transcript would be {actual}, more than a run may hold ({size}, {variable}): {path} is not "
                   "written")


class JournalFull(Exception):
    """The next step's line would take the journal past the size a run may hold."""


def _run(args) -> int:
    from .engine.model import MissingKey, ModelConfig
    from .engine.runner import start

    config = ModelConfig(model=args.model, stream=args.stream)
    try:
        run = start(args.task, scenario=args.scenario, config=config, workspace=args.workspace,
                    tool_timeout=args.tool_timeout, max_turns=args.max_turns, lang=args.lang,
                    keep_workspace=args.keep_workspace, toolset=args.toolset, compact_at=args.compact_at,
                    profile=args.profile, budget=args.budget)
    except (KeyError, ValueError) as exc:  # a WorkspaceError too: what the folder would need
        out(f"error: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except MissingKey as exc:
        out(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. --workspace names a file
        out(f"error: workspace {exc.filename or args.workspace}: {exc.strerror}", file=sys.stderr)
        return 2
    with run:  # removes the workspace it made, unless --keep-workspace
        return _run_to_end(run, args, config)


def _run_to_end(run, args, config) -> int:
    lang = args.lang
    label = say(lang, "scripted (offline, no key)") if config.scripted else config.model
    kept = " (kept after the run)" if args.keep_workspace and not args.workspace else ""
    out(say(lang, "model: {model} · workspace: {workspace}", model=label, workspace=run.workspace) + kept)
    if run.profile.complete:  # the chapter's loop says nothing of itself, as before
        out(say(lang, "loop: {profile}", profile=say(lang, ABOUT[run.profile.name])))
    out(run.tools.sandbox.describe())
    for warning in run.tools.warnings:  # e.g. no bubblewrap here: said before anything runs
        out(warning)
    log = _journal(run, args.journal)
    if args.journal and log is None:
        return 1
    limit = runs.run_max_bytes()

    def on_step(step) -> None:
        out(describe(run.trace, step.index, lang), flush=True)
        if log is not None:  # one JSON line a step, as it happens: `tail -f` and `jq` read it
            line = (journal.step_line(run.trace, step.index) + "\n").encode()
            if log.tell() + len(line) > limit:
                raise JournalFull()
            log.write(line)
            log.flush()

    try:
        run.run_to_end(on_step=on_step)
    except JournalFull:
        out("error: " + say(lang, JOURNAL_FULL, path=args.journal, size=size_words(limit),
                            variable=runs.RUN_MAX_VARIABLE), file=sys.stderr)
        return 1
    except Exception as exc:  # an API error: say what to do, keep what was done
        from .views.errors import explain

        out(f"error: {explain(exc, lang)}", file=sys.stderr)
        if args.out and _write(run.trace, args.out, lang):
            out(f"the steps so far are in {args.out}", file=sys.stderr)
        return 1
    finally:
        if log is not None:
            log.close()
    out(say(lang, "ended: {ended} · turn_count {turn} · {n} steps", ended=run.state.ended,
            turn=run.state.turn_count, n=len(run.trace)))
    if args.out:
        if not _write(run.trace, args.out, lang):
            return 1
        out(say(lang, "transcript: {path}", path=args.out))
    return 1 if run.state.ended in FAILED else 0


FAILED = ("retries_exhausted", "prompt_too_long")  # the complete loop ended on an error it could not get past


def _journal(run, path: str | None):
    """The run's journal file, its first line written (its facts), or None (no --journal, or it cannot be written)."""
    if not path:
        return None
    try:
        log = open(path, "wb")  # bytes: its size is where it is (tell), checked against the size a run may hold
    except OSError as exc:
        out(f"error: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return None
    log.write((journal.head_line(run.trace.meta, {"profile": run.profile.name}) + "\n").encode())
    return log


def _replay(args) -> int:
    if args.follow:
        return _follow(args)
    try:
        trace = transcript.load(args.file)
    except transcript.TranscriptError as exc:
        trace = _imported_as_is(args.file)  # an imported log keeps its broken pairs, to be seen
        if trace is None:
            out(f"error: {exc}", file=sys.stderr)
            return 1
        broken = len(transcript.violations(trace))
        out(f"note: this imported history breaks the API's tool-use rules in {broken} place(s); "
              f"`python -m loop check {args.file}` lists them")
    from .importers.derive import cover_the_rest

    rest = cover_the_rest(trace)
    if rest:
        out(f"note: {rest.render()}")
    lang = known(args.lang or trace.meta.get("lang"))  # a run is replayed in the language it was made in
    unknown = say(lang, "(not recorded)")  # a log that names no model (or no task) says so, never "None"
    out(say(lang, "model: {model} · task: {task} (replay: nothing is run)", model=trace.meta.get("model") or unknown,
            task=trace.meta.get("task") or unknown))
    for i in range(len(trace)):
        out(describe(trace, i, lang))
    return 0



FOLLOW_EVERY = 0.2  # seconds between two looks at the file's size and time: a new step shows within a second
BRANCH_CHANGED = N_("the log's new records make another branch the conversation: its steps from step {step} on "
                    "replace those shown")
REDRAWN = N_("the log's new records complete steps printed above: from step {step} on, as they now read")


def _follow(args) -> int:
    """Print the steps of a Claude Code log as it is written, until Ctrl-C."""
    from pathlib import Path

    from .importers import ImportFailed
    from .importers.follow import Follower

    # The file named is taken as named (a link to it is the user's choice); after that, no link is followed.
    follower, shown, lang = Follower(Path(args.file).expanduser().resolve()), 0, known(args.lang)
    out(f"following {args.file} (Ctrl-C stops)", flush=True)
    try:
        while True:
            try:
                change = follower.poll()
            except OSError as exc:
                out(f"error: {args.file}: {exc.strerror}", file=sys.stderr)
                return 1
            except ImportFailed as exc:
                out(f"error: {exc}", file=sys.stderr)
                return 1
            if change is not None:
                trace = change.imported.trace
                if change.branch_changed:
                    out(say(lang, BRANCH_CHANGED, step=change.first_new + 1), flush=True)
                elif change.first_new < shown:  # a step printed before, completed by the new records
                    out(say(lang, REDRAWN, step=change.first_new + 1), flush=True)
                shown = min(shown, change.first_new)
                for i in range(shown, len(trace)):
                    out(describe(trace, i, lang), flush=True)
                shown = len(trace)
            time.sleep(FOLLOW_EVERY)  # polling the file: nothing to wait on but its size and time
    except KeyboardInterrupt:
        return 0


def _sessions(args) -> int:
    """The sessions of a Claude Code projects folder, newest first; --open N imports the N-th. A name that is not a
    regular file (a link, a FIFO, a device) is not read: a line says so for each."""
    from pathlib import Path

    from .importers import DEFAULT_MAX_BYTES, ImportFailed, import_files
    from .importers.sessions import DEFAULT_DIR, listing, read_session, size_label

    folder = Path(args.dir or DEFAULT_DIR).expanduser()
    if not folder.is_dir():
        out(f"error: {folder}: not a folder", file=sys.stderr)
        return 1
    try:
        listed = listing(folder)
    except OSError as exc:
        out(f"error: {folder}: cannot read it ({exc.strerror})", file=sys.stderr)
        return 1
    found = listed.sessions
    if args.open is None:
        if not found:
            out(f"no session logs (.jsonl) in {folder}")
        project = None
        for n, s in enumerate(found, 1):
            if s.project != project:
                out(f"{s.project}")
                project = s.project
            request = s.first_request or "(no request in the head of the log)"
            out(f"  {n:>3}. {s.date} · {size_label(s.size)} · sub-agents {s.sub_agents} · compactions "
                f"{s.compactions} · errors {s.errors} · {s.path.stem}\n       {request}")
        for note in listed.refused:
            out(note.render())
        return 0
    if not 1 <= args.open <= len(found):
        out(f"error: --open {args.open}: the list has sessions 1 to {len(found)}" if found
            else f"error: no session logs (.jsonl) in {folder}", file=sys.stderr)
        return 1
    chosen = found[args.open - 1]
    out(f"session: {chosen.path}")
    try:
        imported = import_files(read_session(chosen.folder, chosen.names, DEFAULT_MAX_BYTES),
                                max_bytes=DEFAULT_MAX_BYTES)
    except ImportFailed as exc:
        out(f"error: {exc}", file=sys.stderr)
        return 1
    return _report(imported, args.out)


def _imported_as_is(path: str):
    """The trace of a transcript `import` wrote, loaded without the pairing check; None for any other file."""
    try:
        trace = transcript.loads(open(path, "rb").read(), strict=False)
    except (OSError, transcript.TranscriptError):
        return None
    return trace if "imported" in trace.meta else None


def _import(args) -> int:
    from pathlib import Path

    from .importers import DEFAULT_MAX_BYTES, ImportFailed, import_files, import_path

    max_bytes = int(args.max_mb * 1_000_000) if args.max_mb else DEFAULT_MAX_BYTES
    try:
        if len(args.file) == 1:
            imported = import_path(args.file[0], thread=args.thread, max_bytes=max_bytes)
        else:  # a session's log and its sub-agents' logs, named one by one
            files = []
            for name in args.file:
                try:
                    files.append((Path(name).name, Path(name).read_bytes()))
                except OSError as exc:
                    raise ImportFailed(f"{name}: cannot read it ({exc.strerror})") from None
            imported = import_files(files, thread=args.thread, max_bytes=max_bytes)
    except ImportFailed as exc:
        out(f"error: {exc}", file=sys.stderr)
        return 1
    return _report(imported, args.out)


def _report(imported, path: str | None) -> int:
    """What an import read, said on the terminal, and its transcript written to `path`."""
    out(f"format: {imported.format}")
    trace = imported.trace
    for thread in imported.threads:
        chosen = " (imported)" if thread.id == imported.thread else ""
        inside = trace.threads.get(thread.id)
        linked = f" · started by {inside.parent_tool_use_id}" if inside is not None and inside.parent_tool_use_id else ""
        out(f"thread: {thread.id}{chosen} · {thread.n_records} records · {thread.label}{linked}")
    compactions = sum(1 for s in trace.steps if s.stage == "compact")
    if compactions:
        out(f"compactions: {compactions} (each a compact step; the history before it is kept)")
    for warning in imported.warnings:
        out(f"warning: {warning}")
    out(f"{len(imported.trace.messages)} messages, {len(imported.trace)} steps")
    if path:
        try:
            transcript.save(imported.trace, path)
        except OSError as exc:
            out(f"error: cannot write {path}: {exc.strerror}", file=sys.stderr)
            return 1
        out(f"transcript: {path}")
    return 0

def _break(args) -> int:
    """Fork the transcript at --at with the loop broken by --mistake; 0 when it broke as the mistake breaks."""
    from .engine.broken import break_at, why_not
    from .tools import WorkspaceError

    try:
        trace = transcript.load(args.file)
    except transcript.TranscriptError as exc:
        trace = _imported_as_is(args.file)
        if trace is None:
            out(f"error: {exc}", file=sys.stderr)
            return 2
    if not 0 <= args.at < len(trace.steps):
        out(f"error: --at {args.at}: the transcript has steps 0 to {len(trace.steps) - 1}", file=sys.stderr)
        return 2
    cannot = why_not(trace, args.at)[args.mistake]
    if cannot:
        out(f"{args.mistake} cannot happen from step {args.at}: {cannot}")
    try:
        broken = break_at(trace, args.at, args.mistake)
    except WorkspaceError as exc:
        out(f"error: {exc}", file=sys.stderr)
        return 2
    with broken.run:
        saved = broken.trace.with_branches([trace.with_branches([])])  # the original kept beside it, as Save does
        out(f"{args.mistake}: steps 0 to {broken.kept} kept, the broken loop ran on from there "
            f"({len(broken.trace.steps) - broken.kept - 1} step(s))")
        if broken.offline and broken.note:
            out(f"note: {broken.note}")
        last = broken.trace.steps[broken.stopped_at]
        if broken.error_line():
            out(f"stopped at step {broken.stopped_at} ({last.stage}, the call the API refused): {broken.error_line()}")
        elif broken.broke:
            out(f"stopped at step {broken.stopped_at} ({last.stage}): the tool_use was never run: no loop runs it")
        else:
            out(f"stopped at step {broken.stopped_at} ({last.stage}, {last.ended}): it did not break"
                + (f": {broken.note}" if broken.note and not cannot else ""))
        if args.out:
            data = transcript.dumps(saved).encode()
            try:
                with open(args.out, "wb") as f:
                    f.write(data)
            except OSError as exc:
                out(f"error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
                return 2
            out(f"transcript: {args.out}")
    return 0 if broken.broke else 1


def _check(args) -> int:
    try:
        trace = transcript.loads(open(args.file, "rb").read(), strict=False)
    except OSError as exc:
        out(f"error: {args.file}: {exc.strerror}", file=sys.stderr)
        return 1
    except transcript.TranscriptError as exc:
        out(f"error: {exc}", file=sys.stderr)
        return 1
    broken = transcript.violations(trace)
    for where, violation in broken:
        out(f"{where}: {violation}" if where else violation)
    if broken:
        return 1
    n = len(rules.pairs(trace.messages))
    calls = sum(1 for s in trace.steps if s.stage == "call_model")
    out(f"ok: {len(trace.messages)} messages, {n} tool_use/tool_result pair(s) hold the API's rules; "
          f"so do the {calls} request(s) sent")
    for thread in list(trace.threads.values())[1:]:
        started = f"started by {thread.parent_tool_use_id}" if thread.parent_tool_use_id is not None else \
            "not started by a tool_use the log shows"
        out(f"ok: thread {thread.id} ({started}): {len(thread.messages)} messages, "
              f"{len(rules.pairs(thread.messages))} pair(s)")
    compactions = [s for s in trace.steps if s.stage == "compact"]
    if compactions:
        kinds = ", ".join(f"{k} ×{sum(1 for s in compactions if s.detail.kind == k)}"
                          for k in transcript.COMPACT_KINDS if any(s.detail.kind == k for s in compactions))
        out(f"ok: {len(compactions)} compaction(s) ({kinds}); every history before them is kept")
    return 0


def _quiz(args) -> int:
    import json

    from .views.questions import questions

    try:
        trace = transcript.load(args.file)
    except OSError as exc:
        out(f"error: {args.file}: {exc.strerror}", file=sys.stderr)
        return 2
    except transcript.TranscriptError as exc:
        trace = _imported_as_is(args.file)  # an imported log keeps its broken pairs: its questions still hold
        if trace is None:
            out(f"error: {exc}", file=sys.stderr)
            return 2
    lang = known(args.lang or trace.meta.get("lang"))  # asked in the language the run was made in, by default
    for question in questions(trace, lang):
        out(json.dumps(question.to_json(), ensure_ascii=False))
    return 0


# `yours`: a learner's own program, run in the sandbox (loop/yours/), its stages printed as `run` prints them.
YOURS_TOOLSETS = (None, "s01", "s02", "s04", "s06")  # the tools a learner's loop of the course's chapters drives
YOURS_SCENARIOS = [s.name for s in SCENARIOS.values() if s.toolset in YOURS_TOOLSETS]
YOURS_BROKEN = N_("broken rule: {name}: {said}")
YOURS_ERROR = N_("error: {said}")
YOURS_STOPPED = N_("stopped: {said}")
YOURS_NOTE = N_("note: {said}")
YOURS_API_ERROR = N_("the API's error: {status} {message}")
YOURS_LINE = N_("your line {line}: {code}")
YOURS_FIX = N_("the fix: {fix}")
YOURS_LAB = N_("see it in the Mistakes lab: {link}")
YOURS_ENDED = N_("your loop ended by itself, every rule kept: {calls} model calls")
YOURS_PRINTED = N_("what your program printed:")
YOURS_LEFT_OUT = N_("{n} file(s) of the project were not copied into the sandbox (past its bounds: 1 MiB a file, "
                    "16 MiB and 2,000 files in all)")
YOURS_HELP = """\
FILE is your agent, as you run it yourself: a whole script (`if __name__ == "__main__":` with an input() REPL, its
own client, its own tools and dispatch map, python-dotenv, the anthropic or the openai SDK), a file of a package
(run as `python -m package.module`, so relative imports work), or a file that only defines agent_loop(state) or
agent_loop(messages). Run it from your project's folder: that folder is copied into the sandbox, read-only, so
modules of your own and your .env are found.

What it is given: the scenario's task typed into its input(), then end of input; every HTTP request it makes, to
any address, answered by Loopscope's offline model (the Messages API for a path ending in /messages, OpenAI Chat
Completions for /chat/completions; anything else has no network); the model, key and base-URL variables it reads
(MODEL_ID, ANTHROPIC_API_KEY, OPENAI_BASE_URL, ...) set unless you set them (a placeholder key, which never leaves
the sandbox); the workspace as its working directory. A file that only defines agent_loop also gets the chapter's
client, MODEL, SYSTEM, TOOLS, MAX_TOKENS (the scenario's), run_tool(block) and run_bash(command).
"""


def _yours(args) -> int:
    from pathlib import Path

    from .text.terminal import as_shown
    from .yours import sandboxed
    from .yours.lines import code_at
    from .yours.program import Program, ProgramError, parse_env_file
    from .yours.reading import read

    lang = args.lang
    env = {}
    for path in args.env_file or []:
        try:
            env.update(parse_env_file(Path(path).read_text(encoding="utf-8-sig")))
        except (OSError, UnicodeDecodeError) as exc:
            out(f"error: {path}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
            return 1
    for pair in args.env or []:
        name, eq, value = pair.partition("=")
        if not eq or not name.isidentifier():
            out(f"error: --env {pair}: write NAME=VALUE", file=sys.stderr)
            return 1
        env[name] = value
    try:
        program = Program.from_file(args.file, env=env)
    except ProgramError as exc:
        out(f"error: {say(lang, exc.note, **exc.values)}", file=sys.stderr)
        return 1
    except OSError as exc:
        out(f"error: {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if program.left_out:
        out(say(lang, YOURS_NOTE, said=say(lang, YOURS_LEFT_OUT, n=program.left_out)))
    yours = read(sandboxed.run(program, args.scenario, lang))
    trace, named, recording = yours.trace, yours.named, yours.recording
    for i in range(len(trace.steps)):
        out(describe(trace, i, lang))
    if recording.output.strip():
        out(say(lang, YOURS_PRINTED))
        out(as_shown(recording.output).rstrip())
    for note in yours.notes:
        out(say(lang, YOURS_NOTE, said=note.render(lang)))
    if named is not None:
        said = named.render(lang)
        if named.is_rule:
            out(say(lang, YOURS_BROKEN, name=named.name, said=said))
        elif named.stopped:
            out(say(lang, YOURS_STOPPED, said=said))
        else:
            out(say(lang, YOURS_ERROR, said=said))
        if named.error:
            out(say(lang, YOURS_API_ERROR, status=named.error.get("status"), message=named.error.get("message")))
        if named.made is not None:  # the line of theirs that made the message the rule is about
            made = named.made
            out(say(lang, made.words(), **made.values(), code=code_at(recording, made.file, made.line)))
        elif named.line and named.file in (None, recording.file):
            out(say(lang, YOURS_LINE, line=named.line, code=code_at(recording, None, named.line)))
        if named.is_mistake:
            out(say(lang, YOURS_FIX, fix=say(lang, MISTAKES[named.name].fix)))
            out(say(lang, YOURS_LAB, link=f"/mistakes?mistake={named.name}"))
    elif yours.kept_every_rule:
        out(say(lang, YOURS_ENDED, calls=len(recording.exchanges)))
    if args.out:
        try:
            with open(args.out, "w", encoding="utf-8") as f:
                f.write(transcript.dumps(trace))
        except OSError as exc:
            out(f"error: cannot write {args.out}: {exc.strerror}", file=sys.stderr)
            return 1
        out(say(lang, "transcript: {path}", path=args.out))
    return 0 if yours.kept_every_rule else 1


# `record`: any command's loop, recorded at the wire (loop/record/), its stages printed on stderr as they settle.
RECORD_CALLS = 1000  # model calls a recording keeps (a real session's: the 64 MiB a run may hold comes first)
RECORD_START = N_("recording {command} at {url} · {model}")
RECORD_OFFLINE = N_("offline: Loopscope's scripted model answers (no key, no network)")
RECORD_UPSTREAM = N_("upstream: {url} answers, with the command's own key (never kept)")
RECORD_ENDED = N_("{command} ended with exit status {status} · {calls} model call(s) recorded · {steps} steps")
RECORD_NOTHING = N_("no model call reached Loopscope. A program that names its own base URL (in its code, or in a "
                    ".env it loads with override=True) does not read ANTHROPIC_BASE_URL or OPENAI_BASE_URL: let it "
                    "read them, and run it again")
RECORD_STOPPED = N_("the recording stopped: {said}; the command went on unrecorded")
RECORD_NOT_FOUND = N_("error: {command}: command not found")
RECORD_CANNOT = N_("error: {command}: cannot run it ({error})")
RECORD_HELP = """\
COMMAND runs as you run it, on this terminal (its input, its output, its exit status), with ANTHROPIC_BASE_URL and
OPENAI_BASE_URL pointing at a recording endpoint on 127.0.0.1 (it answers this machine alone). Every request it makes
there is recorded, and its stages are printed on stderr as the wire shows them: Claude Code, the course's agent
files, any program that reads those variables.

Offline (the default), Loopscope's scripted model answers, using the tools each request offers; ANTHROPIC_API_KEY and
OPENAI_API_KEY, when unset, are set to a placeholder that never leaves the machine. With --upstream URL (e.g.
https://api.anthropic.com), each request goes on to URL with the command's own key header, untouched, and the answer
streams back as it arrives; the key is never written, logged or shown.

Examples:
  python -m loop record --out t.json -- claude -p "List the files in this folder" --output-format json
  printf 'List the files in the workspace\\n' | MODEL_ID=claude-sonnet-4-5 python -m loop record --out s01.t.json -- python agents/s01_agent_loop.py
  python -m loop record --upstream https://api.anthropic.com --out t.json -- claude
"""


def _record(args) -> int:
    import os
    import shlex

    from .engine.scenarios import SCENARIOS as PLAYS
    from .record import command as cmd
    from .record import endpoint
    from .record.live import Live
    from .yours.recorder import Recorder
    from .yours.recording import Recording

    lang, command = args.lang, list(args.argv)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        out("error: " + say(lang, "give the command to record after --"), file=sys.stderr)
        return 2
    shown = shlex.join(command)
    name = os.path.basename(command[0])
    recording = Recording(source="", scenario=args.scenario or "", lang=lang, file=name, sandbox="none")
    model = _playing(PLAYS[args.scenario], lang) if args.scenario else None
    recorder = Recorder(recording, model, max_calls=RECORD_CALLS, max_bytes=runs.run_max_bytes())
    recorded = {"command": name, "upstream": args.upstream is not None}
    log = None
    if args.journal:
        try:
            log = open(args.journal, "wb")
        except OSError as exc:
            out(f"error: cannot write {args.journal}: {exc.strerror}", file=sys.stderr)
            return 2

    def stderr(line: str) -> None:
        out(line, file=sys.stderr, flush=True)

    live = Live(recorder, recorded, lang, stderr, log, args.journal or "")
    server = endpoint.start(recorder, args.upstream, on_call=live.update)
    host, port = server.server_address[:2]
    base = f"http://{host}:{port}"
    stderr(say(lang, RECORD_START, command=shown, url=base,
               model=say(lang, RECORD_UPSTREAM, url=args.upstream) if args.upstream else say(lang, RECORD_OFFLINE)))
    try:
        status = cmd.run(command, cmd.environment(base, args.upstream is not None))
    except FileNotFoundError:
        stderr(say(lang, RECORD_NOT_FOUND, command=command[0]))
        status = 127
    except OSError as exc:
        stderr(say(lang, RECORD_CANNOT, command=command[0], error=exc.strerror or str(exc)))
        status = 126
    finally:
        server.shutdown()
        server.server_close()
    yours = live.update(final=True)
    if log is not None and live.log is not None:
        live.log.close()
    if recorder.stop is not None:
        stderr(say(lang, RECORD_STOPPED, said=say(lang, recorder.stop.note, **recorder.stop.values)))
    calls = len(recording.exchanges)
    stderr(say(lang, RECORD_ENDED, command=name, status=status, calls=calls, steps=len(yours.trace.steps)))
    if not calls and status not in (126, 127):
        stderr("note: " + say(lang, RECORD_NOTHING))
    if args.out and calls:
        if not _write(yours.trace, args.out, lang):
            return status or 1
        stderr(say(lang, "transcript: {path}", path=args.out))
    return status


def _write(trace, path: str, lang: str) -> bool:
    """`trace` into `path` as a transcript, bounded as a saved run is: whether it was written (else why is said)."""
    data = transcript.dumps(trace).encode()
    limit = runs.run_max_bytes()
    if len(data) > limit:
        out("error: " + say(lang, OUT_TOO_LARGE, actual=size_words(len(data)), size=size_words(limit),
                            variable=runs.RUN_MAX_VARIABLE, path=path), file=sys.stderr)
        return False
    try:
        with open(path, "wb") as f:
            f.write(data)
    except OSError as exc:
        out(f"error: cannot write {path}: {exc.strerror}", file=sys.stderr)
        return False
    return True


def _playing(scenario, lang: str):
    """The scripted model playing `scenario` whatever task the command's request holds: its task in the request's
    first person's message, for the model's reading only (the request kept is the one sent)."""
    from .engine import scripted
    from .engine.rules import is_system

    task = scenario.task_in(lang)

    def model(body):
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return scripted.respond(body)
        messages = list(body["messages"])
        first = next((i for i, m in enumerate(messages) if not is_system(m)), None)
        if first is not None and isinstance(messages[first], dict) and messages[first].get("role") == "user":
            messages[first] = {**messages[first], "content": task}
        return scripted.respond({**body, "messages": messages})

    return model


def _scenarios(args) -> int:
    for s in SCENARIOS.values():
        out(f"{s.name:12} {s.task}\n{'':12} ({s.about})")
    return 0


def _serve(args) -> int:
    from .engine.server import serve

    server = serve(args.port, context_window=args.context_window)
    host, port = server.server_address[:2]
    out(f"scripted Anthropic-compatible server on http://{host}:{port} (Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m loop", description="The agent loop, one stage at a time.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a task or a scenario to the end, printing each stage")
    run.add_argument("task", nargs="?", help="a free-form task (or use --scenario)")
    run.add_argument("--scenario", choices=list(SCENARIOS), help="a built-in scenario")
    run.add_argument("--model", default=SCRIPTED,
                     help="'scripted' (offline, the default) or a model id (needs ANTHROPIC_API_KEY; "
                          "ANTHROPIC_BASE_URL is honoured)")
    run.add_argument("--out", help="write the transcript to this file")
    run.add_argument("--max-turns", type=int, default=20)
    run.add_argument("--tool-timeout", type=float, default=30.0, help="seconds a command may run (default 30)")
    run.add_argument("--workspace", help="a folder of yours for the commands, left as it is (default: a new one, "
                                         "removed at the end)")
    run.add_argument("--keep-workspace", action="store_true",
                     help="keep the workspace Loopscope makes after the run (it prints where)")
    run.add_argument("--stream", action="store_true", help="stream the model's answer")
    run.add_argument("--toolset", choices=list(TOOLSETS),
                     help="the tools: " + "; ".join(f"{k}: {v}" for k, v in TOOLSETS.items())
                          + " (default s01; a scenario made for s04 or s06 brings its own)")
    run.add_argument("--compact-at", type=int, metavar="TOKENS",
                     help="with s06: auto-compact when the history's estimated tokens pass this (default 50,000, "
                          "or the scenario's)")
    run.add_argument("--lang", choices=list(languages()), default="en",
                     help="the learner's language: the scenario's task, the model's words and these lines")
    run.add_argument("--profile", choices=list(PROFILES),
                     help="the loop: minimal (the chapter's, the default) or complete (retries, max_tokens recovery, "
                          "compaction when the prompt is too long, parallel tools); a scenario made for one brings it")
    run.add_argument("--budget", type=int, metavar="TOKENS",
                     help="with --profile complete: the estimated tokens a request may hold before the loop compacts "
                          "(default 150,000)")
    run.add_argument("--journal", metavar="FILE",
                     help="write one JSON line a step to FILE as the run goes (its first line: the run's facts)")
    run.set_defaults(func=_run)

    replay = sub.add_parser("replay", help="print the stages of a transcript, running nothing")
    replay.add_argument("file")
    replay.add_argument("--lang", choices=list(languages()), help="default: the language the run was made in")
    replay.add_argument("--follow", action="store_true",
                        help="FILE is a Claude Code log still being written: print its steps as they are written, "
                             "until Ctrl-C")
    replay.set_defaults(func=_replay)

    ses = sub.add_parser("sessions", help="list the sessions of a Claude Code projects folder (date, first request, "
                                          "size, sub-agents, compactions, errors), newest first")
    ses.add_argument("dir", nargs="?", help="the folder (default ~/.claude/projects), or one project's folder")
    ses.add_argument("--open", type=int, metavar="N", help="import the N-th session of the list, with its "
                                                           "sub-agents' logs")
    ses.add_argument("--out", help="with --open: write the Loopscope transcript to this file")
    ses.set_defaults(func=_sessions)

    check = sub.add_parser("check", help="check a transcript against the API's tool-use pairing rules")
    check.add_argument("file")
    check.set_defaults(func=_check)

    brk = sub.add_parser("break", help="fork a transcript at a step with the loop broken one of the Mistakes lab's "
                                       "ways, and run it on against the offline model until the API refuses it")
    brk.add_argument("file")
    brk.add_argument("--at", type=int, required=True, metavar="STEP",
                     help="the step to break from, counted from 0 as in the transcript's steps (0 to STEP are kept)")
    brk.add_argument("--mistake", required=True, choices=list(MISTAKE_NAMES))
    brk.add_argument("--out", help="write the broken branch's transcript to this file (the original beside it)")
    brk.set_defaults(func=_break)

    imp = sub.add_parser("import", help="import a Claude Code log, an Anthropic or OpenAI history, or a course trace")
    imp.add_argument("file", nargs="+",
                     help="a file, or a Claude Code session's log with its sub-agents' logs (several files, the "
                          "folder holding them, or a zip)")
    imp.add_argument("--out", help="write the Loopscope transcript to this file")
    imp.add_argument("--thread", help="import one thread of a Claude Code log alone (default: every thread, each "
                                      "sub-agent inside the Task call that started it)")
    imp.add_argument("--max-mb", type=float, help="refuse files bigger than this many MB (default 100)")
    imp.set_defaults(func=_import)

    quiz = sub.add_parser("quiz", help="print the questions asked before the steps of a transcript, one JSON line "
                                       "a question")
    quiz.add_argument("file")
    quiz.add_argument("--lang", choices=list(languages()), help="default: the language the run was made in")
    quiz.set_defaults(func=_quiz)

    yours = sub.add_parser("yours", help="run your own agent (a whole script, a file of a package, or a file "
                                         "defining agent_loop) in the sandbox, print its stages and name the first "
                                         "rule it breaks", description=YOURS_HELP,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    yours.add_argument("file", help="your agent's Python file: run from your project's folder when it imports modules "
                                    "of your own")
    yours.add_argument("--scenario", choices=YOURS_SCENARIOS, default="list-files", metavar="NAME",
                       help="a built-in scenario: " + ", ".join(YOURS_SCENARIOS) + " (default list-files)")
    yours.add_argument("--lang", choices=list(languages()), default="en",
                       help="the learner's language: the scenario's task, the model's words and these lines")
    yours.add_argument("--env", action="append", metavar="NAME=VALUE",
                       help="set a variable for your program (again for more); it wins over what Loopscope sets")
    yours.add_argument("--env-file", action="append", metavar="FILE",
                       help="set the NAME=VALUE lines of FILE for your program (a .env file)")
    yours.add_argument("--out", help="write the transcript (with your source) to this file")
    yours.set_defaults(func=_yours)

    record = sub.add_parser("record", help="run a command (Claude Code, your agent file, any agent) with its model "
                                           "calls recorded at the wire, its stages printed on stderr",
                            description=RECORD_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
                            usage="python -m loop record [--out T.json] [--upstream URL] [--scenario NAME] "
                                  "[--lang L] [--journal FILE] -- COMMAND [ARGS...]")
    record.add_argument("--out", help="write the transcript to this file when the command ends")
    record.add_argument("--upstream", metavar="URL",
                        help="forward each request to URL (https://api.anthropic.com, or any compatible server) "
                             "with the command's own key, instead of the offline model")
    record.add_argument("--scenario", choices=YOURS_SCENARIOS, metavar="NAME",
                        help="offline: the scripted model plays this scenario whatever the task says: "
                             + ", ".join(YOURS_SCENARIOS))
    record.add_argument("--lang", choices=list(languages()), default="en",
                        help="the language of these lines (and of the scenario's task)")
    record.add_argument("--journal", metavar="FILE",
                        help="append one JSON line a step to FILE as the steps settle (Replay and "
                             "`replay --follow` read it as it grows)")
    record.add_argument("argv", nargs=argparse.REMAINDER, metavar="COMMAND", help="-- COMMAND [ARGS...]")
    record.set_defaults(func=_record)

    scen = sub.add_parser("scenarios", help="list the built-in scenarios")
    scen.set_defaults(func=_scenarios)

    serve = sub.add_parser("serve", help="serve the scripted model over HTTP on 127.0.0.1")
    serve.add_argument("--port", type=int, default=8765)
    serve.add_argument("--context-window", type=int, metavar="TOKENS",
                       help="refuse a prompt longer than this, as the API does (400 `prompt is too long`)")
    serve.set_defaults(func=_serve)

    from .files.runs_cli import add_parser as add_runs

    add_runs(sub)

    args = parser.parse_args(argv)
    if args.command == "record" and args.upstream is not None and args.scenario:
        parser.error("--scenario is the offline model's: it cannot be used with --upstream")
    if args.command == "record" and args.upstream is not None and \
            not args.upstream.startswith(("http://", "https://")):
        parser.error("--upstream needs an http:// or https:// URL")
    if args.command == "run" and not (args.task or args.scenario):
        parser.error("run needs a TASK or --scenario NAME")
    if args.command == "run" and args.compact_at is not None and args.compact_at < 1:
        parser.error("--compact-at needs a positive number of tokens")
    if args.command == "run" and args.budget is not None and args.budget < 1:
        parser.error("--budget needs a positive number of tokens")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
