"""About the loop: the chapter's idea on one page."""

import streamlit as st

from loop.diagram import dot
from loop.notes import ONE_SENTENCE
from pages.views.i18n import lang, t
from pages.views.nav import through_app

through_app()

CHAPTER_LOOP = """\
def agent_loop(state):                       # 1: state["messages"] holds the request
    while True:
        response = client.messages.create(   # 2: call the model
            model=MODEL, system=SYSTEM, messages=state["messages"],
            tools=TOOLS, max_tokens=8000)
        state["messages"].append({           # 3: append the response itself
            "role": "assistant", "content": response.content})
        if response.stop_reason != "tool_use":
            state["transition_reason"] = None  # 4: anything else ends it
            return
        results = []
        for block in response.content:        # 4: run each tool_use
            if block.type == "tool_use":
                output = run_tool(block)
                results.append({"type": "tool_result",
                                "tool_use_id": block.id, "content": output})
        state["messages"].append({           # 5: write back, ONE user message
            "role": "user", "content": results})
        state["turn_count"] += 1
        state["transition_reason"] = "tool_result"
"""

TEXT = {
    "en": {
        "title": "About the loop",
        "intro": "A model alone only predicts text. It becomes an **agent** when code around it repeats: ask the "
                 "model, it asks for a tool, really run the tool, write the result back, ask again.",
        "remember": "**The one sentence to remember:**",
        "body": """
### The five stages of one turn
1. **Put the user's request into history:** `messages = [{"role": "user", "content": query}]`
2. **Call the model** with `system`, `messages`, `tools` and `max_tokens`.
3. **Append the assistant response itself** to `messages`: `{"role": "assistant", "content": response.content}`.
4. **Read `stop_reason`.** Anything but `"tool_use"` ends the loop (`transition_reason = None`).
   Otherwise run every `tool_use` block, in order, and collect a `tool_result` for each, with the same id.
5. **Write the results back as ONE user message**, then `turn_count += 1`,
   `transition_reason = "tool_result"`, and go to 2.

### The LoopState
`messages` is the working context of the next call, not a chat log for display;
`turn_count` starts at 1; `transition_reason` says why the loop goes on (`"tool_result"`), or `None` when it ends.

### Two classic mistakes
- **Not appending the assistant response.** "I only need the final answer", so stage 3 is skipped. The next
  request then holds `tool_result`s that answer a `tool_use` the history no longer contains, and the API
  refuses it: *unexpected `tool_use_id` found in `tool_result` blocks*.
- **Treating `tool_result` as a terminal log.** The tool runs, its output is printed, and it is never written
  back. The model never sees what happened and cannot take the next step; the API refuses the next request:
  *`tool_use` ids were found without `tool_result` blocks immediately after*.
""",
        "try": "### Try it",
        "step": "Step through a run, one stage a click",
        "replay": "Replay a saved transcript or a sample",
        "lab": "Break the loop on purpose in the Mistakes lab",
        "caption": "Both pages show the same views: the diagram with the stage just executed, the messages "
                   "as the model will see them, the tool_use ↔ tool_result pairs and the LoopState after each step.",
        "whole": "### The whole loop, as the chapter writes it",
    },
    "ja": {
        "title": "loop について",
        "intro": "言語 model 自体は、次にどんな文字列を出すかを予測するだけです。model に聞く → tool を使いたいと言う → "
                 "本当に実行する → 結果を model へ戻す → また聞く、を繰り返す code があって初めて **agent** になります。",
        "remember": "**一文で覚える:**",
        "body": """
### 1 turn の 5 つの段階
1. **user の依頼を history に入れる:** `messages = [{"role": "user", "content": query}]`
2. **model を呼ぶ:** `system`・`messages`・`tools`・`max_tokens` をまとめて送ります。
3. **assistant response 自体を `messages` に append する:** `{"role": "assistant", "content": response.content}`
4. **`stop_reason` を見る。** `"tool_use"` 以外なら loop は終わります（`transition_reason = None`）。
   そうでなければ `tool_use` block を順に全部実行し、それぞれ同じ id の `tool_result` を集めます。
5. **結果を user message 1 つとして write-back する。** `turn_count += 1`、
   `transition_reason = "tool_result"` にして 2 へ戻ります。

### LoopState
`messages` は表示用の chat transcript ではなく、次の呼び出しの作業 context です。
`turn_count` は 1 から始まり、`transition_reason` は loop が続く理由（`"tool_result"`）、終わるときは `None` です。

### 典型的な 2 つの間違い
- **assistant response を append しない。** 「最終答えだけ取れればいい」と第 3 段階を落とすと、次の request の
  `tool_result` が、history にもう無い `tool_use` に答えることになり、API は拒否します:
  *unexpected `tool_use_id` found in `tool_result` blocks*。
- **`tool_result` を terminal のログとして扱う。** tool は動き、出力は表示されても、history に戻されません。
  model は何が起きたかを見られず、次の一手を考えられません。API は次の request を拒否します:
  *`tool_use` ids were found without `tool_result` blocks immediately after*。
""",
        "try": "### 試してみる",
        "step": "1 クリックで 1 段階ずつ実行を追う",
        "replay": "保存した transcript やサンプルを再生する",
        "lab": "「間違いラボ」でわざと loop を壊してみる",
        "caption": "どちらのページも同じ表示です: 直前に実行した段階を示す図、model が見るとおりの messages、"
                   "tool_use ↔ tool_result の対応、各ステップ後の LoopState。",
        "whole": "### この章が書く loop 全体",
    },
    "zh": {
        "title": "关于循环",
        "intro": "语言模型本身只会预测下一段文字。只有当外面的代码不断重复——问模型 → 它请求工具 → 真正运行工具 → "
                 "把结果写回 → 再问——它才成为 **agent**。",
        "remember": "**一句话记住：**",
        "body": """
### 一轮的五个阶段
1. **把用户的请求放进历史：** `messages = [{"role": "user", "content": query}]`
2. **调用模型**，带上 `system`、`messages`、`tools` 和 `max_tokens`。
3. **把 assistant 的回复本身追加**到 `messages`：`{"role": "assistant", "content": response.content}`。
4. **读取 `stop_reason`。** 只要不是 `"tool_use"`，循环就结束（`transition_reason = None`）。
   否则按顺序运行每个 `tool_use` 块，为每个块收集同一 id 的 `tool_result`。
5. **把结果作为一条 user 消息写回**，然后 `turn_count += 1`，
   `transition_reason = "tool_result"`，回到第 2 步。

### LoopState
`messages` 是下一次调用的工作上下文，不是用来显示的聊天记录；
`turn_count` 从 1 开始；`transition_reason` 说明循环为什么继续（`"tool_result"`），结束时为 `None`。

### 两个典型错误
- **不追加 assistant 的回复。** “我只要最终答案”，于是跳过了第 3 步。下一次请求里的 `tool_result`
  回答的是历史中已经不存在的 `tool_use`，API 会拒绝：
  *unexpected `tool_use_id` found in `tool_result` blocks*。
- **把 `tool_result` 当成终端日志。** 工具运行了，输出打印出来了，却从未写回。模型看不到发生了什么，
  无法决定下一步；API 会拒绝下一次请求：
  *`tool_use` ids were found without `tool_result` blocks immediately after*。
""",
        "try": "### 动手试试",
        "step": "一次点击执行一个阶段",
        "replay": "回放保存的记录或示例",
        "lab": "在“错误实验室”里故意弄坏循环",
        "caption": "两个页面的视图相同：标出刚执行阶段的循环图、模型将看到的 messages、"
                   "tool_use ↔ tool_result 配对，以及每一步之后的 LoopState。",
        "whole": "### 本章写出的完整循环",
    },
}
words = TEXT[lang()]

st.title(words["title"])
st.markdown(words["intro"])
st.info(f"{words['remember']} {ONE_SENTENCE[lang()]}", icon=":material/lightbulb:")

left, right = st.columns([3, 2], gap="large")
with left:
    st.markdown(words["body"])
with right:
    st.graphviz_chart(dot(translate=t), width="stretch")
    st.markdown(words["try"])
    st.page_link("pages/step_through.py", label=words["step"], icon=":material/play_arrow:")
    st.page_link("pages/replay.py", label=words["replay"], icon=":material/history:")
    st.page_link("pages/mistakes.py", label=words["lab"], icon=":material/bug_report:")
    st.caption(words["caption"])

st.markdown(words["whole"])
st.code(CHAPTER_LOOP, language="python")
