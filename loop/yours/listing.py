"""The chapter's `agent_loop`, as the chapter writes it: what the page's editor starts with and what tests run.

Word for word the listing of chapter s01 ("全体を 1 つの loop にまとめる"), with the names the chapter uses and
Loopscope provides: `client`, `MODEL`, `SYSTEM`, `TOOLS`, `run_tool`.
"""

CHAPTER_LOOP = '''def agent_loop(state):
    while True:
        response = client.messages.create(
            model=MODEL,
            system=SYSTEM,
            messages=state["messages"],
            tools=TOOLS,
            max_tokens=8000,
        )

        state["messages"].append({
            "role": "assistant",
            "content": response.content,
        })

        if response.stop_reason != "tool_use":
            state["transition_reason"] = None
            return

        results = []
        for block in response.content:
            if block.type == "tool_use":
                output = run_tool(block)
                results.append({
                    "type": "tool_result",
                    "tool_use_id": block.id,
                    "content": output,
                })

        state["messages"].append({
            "role": "user",
            "content": results,
        })
        state["turn_count"] += 1
        state["transition_reason"] = "tool_result"
'''
