"""Sub-agents (the course's s04): a `task` tool_use runs a loop of its own.

    parent: ... decide -> run_tool(task) ---------------------------> write back ...
                               |                                ^
                               v                                | only its final text
    child:         user request(prompt) -> call -> ... -> end_turn

The child starts with fresh `messages = [{"role": "user", "content": prompt}]`,
its own system prompt, the parent's tools but `task` (no recursion) and a turn
limit. It shares the workspace, not the history: only its final text comes
back as the parent's `tool_result`, and its history stays out of the parent's
context. The runner (`runner.py`) steps the child's stages one at a time like
the parent's; this module says what a child is made of.
"""

from __future__ import annotations

from pathlib import Path

from .rules import blocks
from .state import LoopState
from ..tools import Tool, ToolBox, ToolOutput

SYSTEM = ("You are a coding subagent working in a workspace folder. Complete the given task, then summarize "
          "your findings.")
PARENT_HINT = " Use the task tool to delegate exploration or subtasks."
MAX_TURNS = 30  # the course's safety limit for a child loop
NO_SUMMARY = "(no summary)"


class Task(Tool):
    """The course's `task` tool. The runner answers it with a child loop; it never runs as a plain tool."""

    name = "task"
    description = ("Spawn a subagent with fresh context. It shares the filesystem but not conversation history. "
                   "Only its final answer comes back.")
    input_schema = {
        "type": "object",
        "properties": {"prompt": {"type": "string"},
                       "description": {"type": "string", "description": "Short description of the task"}},
        "required": ["prompt"],
    }
    starts_thread = True

    def run(self, tool_input: dict, workspace: Path) -> ToolOutput:
        # Reached only when the input cannot start a child (the runner checks `starts_child` first).
        return ToolOutput("Error: task needs a text `prompt` for the subagent.", is_error=True)


def system(lang: str = "en") -> str:
    """A sub-agent's system prompt, asking for the learner's language as the parent's does."""
    from .language import system_prompt

    return system_prompt(lang, SYSTEM)


def starts_child(tools: ToolBox, block: dict) -> bool:
    """Does this tool_use start a sub-agent's loop? (a `task` with a text prompt)"""
    tool = tools.tools.get(block.get("name"))
    tool_input = block.get("input")
    return bool(getattr(tool, "starts_thread", False)) and isinstance(tool_input, dict) \
        and isinstance(tool_input.get("prompt"), str) and bool(tool_input["prompt"].strip())


def child_tools(tools: ToolBox) -> ToolBox:
    """The parent's tools without `task`: a sub-agent cannot start another."""
    return ToolBox([t for t in tools.tools.values() if not getattr(t, "starts_thread", False)], tools.workspace)


def thread_id(block: dict) -> str:
    return f"task-{block.get('id')}"


def label(block: dict) -> str:
    tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
    said = tool_input.get("description") or tool_input.get("prompt") or ""
    said = " ".join(str(said).split())
    return said if len(said) <= 60 else said[:59] + "…"


def answer(state: LoopState) -> ToolOutput:
    """What the parent gets back: the child's final text, nothing else of its history."""
    last = next((m for m in reversed(state.messages) if isinstance(m, dict) and m.get("role") == "assistant"), None)
    texts = [str(b.get("text", "")) for b in blocks(last or {}) if isinstance(b, dict) and b.get("type") == "text"]
    text = "".join(texts).strip()
    if state.ended not in ("end_turn", None) and text:
        text += f"\n\n(the subagent's loop ended on {state.ended})"
    return ToolOutput(text or NO_SUMMARY)


class ThreadModel:
    """The run's model, called with a thread's own system prompt (a child's is not the parent's)."""

    def __init__(self, model, system: str):
        self.model = model
        self.system = system

    @property
    def config(self):
        return self.model.config

    @property
    def name(self) -> str:
        return self.model.name

    def create(self, messages: list, tools: list | None = None, observer=None, **settings):
        settings.setdefault("system", self.system)  # a summary call (compaction) passes its own: none
        return self.model.create(messages, tools, observer, **settings)
