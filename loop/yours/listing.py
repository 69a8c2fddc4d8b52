"""The chapter's `agent_loop`, as the chapter writes it: what the page's editor starts with and what tests run.

Word for word the listing of chapter s01 ("全体を 1 つの loop にまとめる"), with the names the chapter uses and
Loopscope provides: `client`, `MODEL`, `SYSTEM`, `TOOLS`, `MAX_TOKENS`, `run_tool`. A comment names each stage
before it, in the page's language (`chapter_loop(lang)`); `CHAPTER_LOOP` is the English one.
"""

from ..text.catalogs import N_, say

# The comments of the listing, one a stage in the chapter's order (and why max_tokens is not the chapter's 8000).
CALL = N_("call the model")
TOKENS = N_("the chapter writes 8000; the scenario sets its own here")
APPEND = N_("append the assistant's response to messages, all of its blocks")
STOP = N_("stop unless the model asked for a tool")
RUN = N_("run each tool_use, in order")
WRITE_BACK = N_("write the results back as one user message, and count the turn")
COMMENTS = (CALL, TOKENS, APPEND, STOP, RUN, WRITE_BACK)

CHAPTER_LOOP = f'''def agent_loop(state):
    while True:
        # {CALL}
        response = client.messages.create(
            model=MODEL,
            system=SYSTEM,
            messages=state["messages"],
            tools=TOOLS,
            # {TOKENS}
            max_tokens=MAX_TOKENS,
        )

        # {APPEND}
        state["messages"].append({{
            "role": "assistant",
            "content": response.content,
        }})

        # {STOP}
        if response.stop_reason != "tool_use":
            state["transition_reason"] = None
            return

        # {RUN}
        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = run_tool(block)
                results.append({{
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": output,
                }})

        # {WRITE_BACK}
        state["messages"].append({{
            "role": "user",
            "content": results,
        }})
        state["turn_count"] += 1
        state["transition_reason"] = "tool_result"
'''


def in_language(source: str, lang: str) -> str:
    """`source` (the listing, or a piece of it left out) with the listing's comments said in `lang`."""
    for comment in COMMENTS:
        source = source.replace(f"# {comment}\n", f"# {say(lang, comment)}\n")
    return source


def chapter_loop(lang: str = "en") -> str:
    """The chapter's listing, its comments in `lang`: the code is the same in every language."""
    return in_language(CHAPTER_LOOP, lang)
