"""Three exercises, one a closing statement of the chapter, and one beyond it, each checked from what the learner's
loop really sent.

    1  without the loop, a tool_use is only a wish: nothing runs it
    2  the response is appended to messages before the tools run, or the next turn loses its context
    3  a tool_result is not a terminal log: it goes back into messages as the next turn's input
       (the chapter's own write-back passes: the chapter never writes `is_error`)
    beyond the chapter: a failed command's tool_result says so, `"is_error": true`

Each starts from the chapter's listing with ONE piece missing (a `# TODO` in the page's language), and its check
runs the learner's loop on scenarios of its own, not the one the learner picked, then reads the RECORDINGS:
request k+1 against request k, response k and the tools the tool box ran. The learner's source is never read,
so a loop that looks right but sends the wrong thing fails, and one written differently but sending the right
thing passes.

    verdict = run_exercise(EXERCISES["write-back"], source, "ja", runner)   # runner: loop.yours.sandboxed.run
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable

from ..engine.rules import tool_results, tool_uses
from ..text.catalogs import N_, Note, say
from .listing import CHAPTER_LOOP, in_language
from ..engine.mistakes import MISTAKES, find_response, shape
from .named import named
from .recording import MAX_CALLS, REFUSED, RETURNED, Exchange, Recording, ToolRun

# A finding: the call whose request shows what went wrong (index in the recording's exchanges), and what.
Finding = tuple[int, Note]
Runner = Callable[..., Recording]  # run(source, scenario, lang, *, max_calls) -> Recording


@dataclass(frozen=True)
class Verdict:
    """What the check found: passed or not, why (in the page's language), and where."""

    passed: bool
    why: str
    call: int | None = None  # the call it failed at: index in that scenario's Recording.exchanges (shown + 1)
    scenario: str | None = None  # the check scenario it failed on
    note: Note | None = None  # `why`, to be said again in another language


@dataclass(frozen=True)
class Exercise:
    """A starting loop with one piece missing, the goal in a sentence, a hint, and a check on scenarios of its own."""

    name: str
    statement: int | None  # the chapter's closing statement it teaches: 1, 2 or 3; None: it goes beyond the chapter
    title: str  # messages (English, N_): said in the page's language with say()
    goal: str
    hint: str
    todo: str  # the comment that stands where the missing piece was
    missing: str  # the lines of the chapter's listing the starter leaves out (or, `added`, adds to)
    answer: str  # a loop that passes: the chapter's listing (beyond it, with is_error written back)
    scenarios: tuple[str, ...]
    finding: Callable[[Recording], Finding | None]  # the first thing a recording shows against the statement
    added: bool = False  # the listing has nothing to leave out: the `# TODO` comes after `missing`, kept

    def starter(self, lang: str = "en") -> str:
        """The chapter's agent_loop with this exercise's piece missing, marked by a `# TODO`, its comments in `lang`."""
        indent = self.missing[:len(self.missing) - len(self.missing.lstrip(" "))]
        todo = f"{indent}# TODO: {say(lang, self.todo)}\n"
        return in_language(CHAPTER_LOOP.replace(self.missing, self.missing + todo if self.added else todo, 1), lang)

    def label(self, lang: str = "en") -> str:
        """What the exercise picker says: the statement it teaches and its title, in `lang`."""
        if self.statement is None:
            return say(lang, BEYOND, title=say(lang, self.title))
        return say(lang, STATEMENT, n=self.statement, title=say(lang, self.title))

    def check(self, recordings: list[Recording], lang: str | None = None) -> Verdict:
        """Passed when every recording (one a check scenario) shows the statement kept and every rule kept.

        `why` is said in `lang`, by default the language the recordings were run in."""
        lang = lang or (recordings[0].lang if recordings else "en")
        for recording in recordings:
            # A run cut short (an exception, a limit) did not get to do what its last call asked: that is what
            # went wrong, not the statement. A refused call is the statement's to explain, when it can.
            cut = recording.outcome not in (RETURNED, REFUSED)
            found = None if cut else self.finding(recording)
            broke = named(recording)
            if found is None and broke is not None and broke.note is not None:
                found = (broke.call, broke.note)
            if found is not None:
                call, note = found
                if broke is not None and broke.is_mistake and broke.call == call:
                    # The run drawn below names it so: the check says the same name first, then what it saw
                    note = Note(NAMED, mistake=Note(MISTAKES[broke.name].title), said=note)
                return Verdict(False, note.render(lang), call, recording.scenario, note)
        note = Note(PASSED, scenarios=[r.scenario for r in recordings])
        return Verdict(True, note.render(lang), None, None, note)


PASSED = N_("Passed: your loop does it on {scenarios}.")
NAMED = N_("{mistake}: {said}")  # one of the seven mistakes, by its one name, then what the check saw
STATEMENT = N_("Statement {n}: {title}")
BEYOND = N_("Beyond the chapter: {title}")


def run_exercise(exercise: Exercise, source: str, lang: str, runner: Runner, *, max_calls: int = MAX_CALLS) -> Verdict:
    """Run `source` on each of the exercise's scenarios with `runner` and check what it sent.

    The scenarios run at once, each in a thread of its own (the sandboxed runner: each in a child of its own), so
    a Check waits for its slowest run, not for their sum; they are checked in the exercise's order."""
    with ThreadPoolExecutor(max_workers=len(exercise.scenarios), thread_name_prefix="loopscope-check") as pool:
        runs = [pool.submit(runner, source, scenario, lang, max_calls=max_calls) for scenario in exercise.scenarios]
        return exercise.check([run.result() for run in runs], lang)


def _sent(exchange: Exchange) -> list:
    messages = exchange.request.get("messages") if isinstance(exchange.request, dict) else None
    return messages if isinstance(messages, list) else []


def _what(run: ToolRun) -> str:
    """A tool run as the learner knows it: bash's command itself, else the tool's name."""
    command = run.input.get("command") if isinstance(run.input, dict) else None
    return command if isinstance(command, str) else run.name


# -- statement 1: the loop runs every tool_use, and goes on until the model answers without one --

NOTHING_RAN = N_("call {call}: the model asked for a tool_use ({name}), and nothing ran it: a tool_use is only a "
                 "wish until the loop runs it")
SOME_RAN = N_("call {call}: the model asked for {asked} tool_use blocks, and your loop ran {ran} of them: run each "
              "one, in order")
NOT_AGAIN = N_("call {call}: the tools ran, and the loop returned: the model never read their results (the loop "
               "goes on while stop_reason is tool_use)")


def _runs_every_tool_use(recording: Recording) -> Finding | None:
    calls = recording.exchanges
    for k, exchange in enumerate(calls):
        response = exchange.response
        if response is None:
            return None  # refused: the rule it broke is named
        asked = tool_uses(response) if response.get("stop_reason") == "tool_use" else []
        if not asked:
            continue
        ran = exchange.tool_runs
        ids = {run.tool_use_id for run in ran}
        unanswered = [b for b in asked if b.get("id") not in ids]
        if len(unanswered) > sum(run.tool_use_id is None for run in ran):  # run_bash runs carry no id
            if not ran:
                return k, Note(NOTHING_RAN, call=k + 1, name=str(asked[0].get("name")))
            return k, Note(SOME_RAN, call=k + 1, asked=len(asked), ran=len(ran))
        if k == len(calls) - 1 and recording.outcome == RETURNED:
            return k, Note(NOT_AGAIN, call=k + 1)
    return None


# -- statement 2: request k+1 holds response k, whole, as the next message after what request k sent --

ONLY_TEXT = N_("call {call}: the request holds only the text of call {before}'s response: its tool_use blocks "
               "were dropped, so the tool_results that follow answer nothing")
NOT_KEPT = N_("call {call}: the request does not hold call {before}'s response: the next turn lost its context "
              "(append the response to messages right after the call)")
AFTER_RESULTS = N_("call {call}: call {before}'s response comes after its tool_results: append it to messages "
                   "before the tools run")
NOT_NEXT = N_("call {call}: call {before}'s response is not the next message after what call {before} sent")


def _appends_the_response_first(recording: Recording) -> Finding | None:
    calls = recording.exchanges
    for k in range(1, len(calls)):
        response = calls[k - 1].response
        if response is None:
            return None
        before, sent = _sent(calls[k - 1]), _sent(calls[k])
        kept = find_response(sent, response)
        said = {"call": k + 1, "before": k}
        if kept is None:
            text = [b for b in shape(response) if b[0] == "text"]
            if text and any(isinstance(m, dict) and m.get("role") == "assistant" and shape(m) == text
                            for m in sent[len(before):]):
                return k, Note(ONLY_TEXT, **said)
            return k, Note(NOT_KEPT, **said)
        if kept != len(before) or sent[:len(before)] != before:
            if any(isinstance(m, dict) and tool_results(m) for m in sent[len(before):kept]):
                return k, Note(AFTER_RESULTS, **said)
            return k, Note(NOT_NEXT, **said)
    return None


# -- statement 3: each tool run's output goes back as its tool_result, on the user side (and beyond the chapter,
# a failed run's with "is_error": true) --

NEVER_BACK = N_("call {call}: `{command}` ran, and its result never went back to the model: a tool_result is the "
                "next turn's input, not a terminal log")
NOT_CARRIED = N_("call {call}: the request does not carry the tool_result of `{command}` (run after call {before}): "
                 "a tool_result is not a terminal log, it goes back into messages")
AS_ASSISTANT = N_("call {call}: the tool_result of `{command}` went back in an assistant message: results are the "
                  "user side's answer, the next turn's input")
NOT_OUTPUT = N_("call {call}: the tool_result of `{command}` does not carry what the tool printed")
NO_IS_ERROR = N_("call {call}: `{command}` failed, and its tool_result went back without \"is_error\": true: the "
                 "model reads the failure as if it were the command's output")
FALSE_ERROR = N_("call {call}: `{command}` succeeded, and its tool_result went back marked \"is_error\": true")


def _text(result: dict) -> str:
    content = result.get("content")
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return content if isinstance(content, str) else ""


def _writes_every_result_back(recording: Recording, is_error: bool = False) -> Finding | None:
    """The first tool run whose output did not go back as its tool_result, on the user side; with `is_error`, or
    whose tool_result does not say (`"is_error": true`) whether the run failed."""
    calls = recording.exchanges
    for k, exchange in enumerate(calls):
        if not exchange.tool_runs:
            continue
        if k + 1 >= len(calls):
            if recording.outcome != RETURNED:
                return None  # stopped from outside: named so
            return k, Note(NEVER_BACK, call=k + 1, command=_what(exchange.tool_runs[0]))
        before, sent = _sent(exchange), _sent(calls[k + 1])
        new = sent[len(before):] if sent[:len(before)] == before else sent
        for j, run in enumerate(exchange.tool_runs):
            said = {"call": k + 2, "command": _what(run)}
            found = {}
            for message in new:
                if isinstance(message, dict):
                    for result in tool_results(message):
                        found.setdefault(message.get("role"), []).append(result)

            def mine(results: list[dict]) -> dict | None:
                if run.tool_use_id is not None:
                    return next((r for r in results if r.get("tool_use_id") == run.tool_use_id), None)
                return results[j] if j < len(results) else None  # run_bash: no id to match, by order

            result = mine(found.get("user", []))
            if result is None:
                if mine(found.get("assistant", [])) is not None:
                    return k + 1, Note(AS_ASSISTANT, **said)
                return k + 1, Note(NOT_CARRIED, **said, before=k + 1)
            if _text(result).strip() != run.output.strip():  # the chapter's run_bash strips it too
                return k + 1, Note(NOT_OUTPUT, **said)
            if is_error and run.is_error and result.get("is_error") is not True:
                return k + 1, Note(NO_IS_ERROR, **said)
            if is_error and not run.is_error and result.get("is_error") is True:
                return k + 1, Note(FALSE_ERROR, **said)
    return None


def _marks_every_failure(recording: Recording) -> Finding | None:
    return _writes_every_result_back(recording, is_error=True)


def _piece(old: str) -> str:
    assert CHAPTER_LOOP.count(old) == 1, old
    return old


RUN_THE_TOOLS = _piece('''        for block in response.content:
            if block.type == "tool_use":
                output = run_tool(block)
                results.append({
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": output,
                })
''')
APPEND = _piece('''        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })
''')
WRITE_BACK = _piece('''        state["messages"].append({
            "role": "user",
            "content": results,
        })
''')
# The chapter's listing writes each result's output back; beyond it, a failed run's is_error too, as the API marks it.
CONTENT = _piece('''                    "content": output,
''')
WITH_IS_ERROR = CHAPTER_LOOP.replace(CONTENT, CONTENT + '''                    "is_error": output.is_error,
''')

EXERCISES: dict[str, Exercise] = {e.name: e for e in [
    Exercise(
        "run-the-tools", 1, N_("A tool_use is only a wish"),
        N_("Run every tool_use block the model asks for, and call the model again until it answers without one."),
        N_("For each block of response.content whose type is tool_use, call run_tool(block) and append "
           "{\"type\": \"tool_result\", \"tool_use_id\": block.id, \"content\": output} to results."),
        N_("run each tool_use block with run_tool(block) and collect its tool_result in results"),
        RUN_THE_TOOLS, CHAPTER_LOOP, ("two-tools", "hello-py"), _runs_every_tool_use),
    Exercise(
        "append-the-response", 2, N_("The response goes into messages first"),
        N_("Append the model's whole response to messages as an assistant message, before the tools run."),
        N_("Right after the call: state[\"messages\"].append({\"role\": \"assistant\", \"content\": "
           "response.content}), all of its blocks, the tool_use ones too."),
        N_("append the response to messages as an assistant message, before the tools run"),
        APPEND, CHAPTER_LOOP, ("hello-py", "two-tools"), _appends_the_response_first),
    Exercise(
        "write-back", 3, N_("A tool_result is the next turn's input"),
        N_("Write every tool_result back into messages as one user message: the next call's input."),
        N_("After the for loop: state[\"messages\"].append({\"role\": \"user\", \"content\": results}), every "
           "tool_result in one user message, a failed command's output too."),
        N_("write the tool_results back into messages as one user message"),
        WRITE_BACK, CHAPTER_LOOP, ("recover", "two-tools"), _writes_every_result_back),
    Exercise(
        "is-error", None, N_("A failed command says so: is_error"),
        N_("This goes beyond the chapter, whose loop never writes is_error: mark a failed command's tool_result "
           "with \"is_error\": true, so the model reads the failure as a failure, not as the command's output."),
        N_("run_tool returns the output, a str; output.is_error says whether the run failed: put it in the "
           "tool_result as \"is_error\": output.is_error. A run that succeeded is not marked."),
        N_("beyond the chapter: \"is_error\": output.is_error, for a failed run"),
        CONTENT, WITH_IS_ERROR, ("recover", "two-tools"), _marks_every_failure, added=True),
]}
