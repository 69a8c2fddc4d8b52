"""Stage notes: what a stage did, why, and the chapter's words for it — in English, Japanese and Chinese.

The Japanese follows the chapter's own terms (messages, tool_use, tool_result,
turn, write-back); the Chinese the course's Chinese edition's.
"""

from __future__ import annotations

LANGUAGES = {"en": "English", "ja": "日本語", "zh": "中文"}

NOTES: dict[str, dict[str, str]] = {
    "user_request": {
        "en": "The user's request goes into `messages` as the first user message. "
              "From now on, `messages` is the working context the model reads on every call.",
        "ja": "user の依頼を最初の user message として `messages` に入れます。"
              "ここから `messages` は、毎回 model が読む作業 context になります。",
        "zh": "用户的请求作为第一条 user 消息放进 `messages`。"
              "从此 `messages` 就是模型每次调用时读取的工作上下文。",
    },
    "call_model": {
        "en": "The model is called with `system`, `messages`, `tools` and `max_tokens`. "
              "It only predicts: it can ask for a tool (`tool_use`), but cannot run one.",
        "ja": "`system`・`messages`・`tools`・`max_tokens` をまとめて model を呼びます。"
              "model は予測するだけで、tool を使いたいと言えても (`tool_use`)、自分では実行できません。",
        "zh": "带着 `system`、`messages`、`tools` 和 `max_tokens` 调用模型。"
              "模型只会预测：它可以请求工具（`tool_use`），但不能自己运行。",
    },
    "append_assistant": {
        "en": "The assistant's response itself is appended to `messages`. "
              "Skip this (\"I only need the final answer\") and the next turn loses its context: "
              "its tool_results would answer a tool_use the model can no longer see.",
        "ja": "assistant response 自体を `messages` に append します。"
              "「最終答えだけ取れればいい」とここを落とすと、次 turn の context が切れ、"
              "tool_result が対応する tool_use を model が見られなくなります。",
        "zh": "把 assistant 的回复本身追加到 `messages`。"
              "如果省掉这一步（“我只要最终答案”），下一轮就丢了上下文："
              "tool_result 对应的 tool_use 模型再也看不到。",
    },
    "decide": {
        "en": "The loop reads `stop_reason`. Only `tool_use` means \"run the tools and go on\"; "
              "anything else (`end_turn`, `max_tokens`, `refusal`, …) ends the loop with "
              "`transition_reason = None`.",
        "ja": "`stop_reason` を見ます。`tool_use` のときだけ tool を実行して続けます。"
              "それ以外（`end_turn`・`max_tokens`・`refusal` など）は loop を終え、"
              "`transition_reason = None` になります。",
        "zh": "循环读取 `stop_reason`。只有 `tool_use` 表示“运行工具并继续”；"
              "其他任何值（`end_turn`、`max_tokens`、`refusal`……）都结束循环，"
              "`transition_reason = None`。",
    },
    "run_tool": {
        "en": "One `tool_use` block is really executed, and its output becomes a `tool_result` "
              "with the same id (`tool_use_id`). Here the model's intent meets the real world.",
        "ja": "`tool_use` block を 1 つ本当に実行し、その出力を同じ id（`tool_use_id`）の "
              "`tool_result` にします。ここで初めて model の意図が real execution に落ちます。",
        "zh": "真正执行一个 `tool_use` 块，它的输出成为同一 id（`tool_use_id`）的 `tool_result`。"
              "模型的意图在这里第一次落到真实执行上。",
    },
    "write_back": {
        "en": "All results go back as ONE user message of `tool_result` blocks, in tool_use order. "
              "`turn_count` grows by one and `transition_reason` becomes \"tool_result\": "
              "the tool result becomes the next inference input.",
        "ja": "すべての結果を、tool_use の順に並べた `tool_result` block の user message 1 つとして "
              "write-back します。`turn_count` が 1 増え、`transition_reason` は \"tool_result\" に。"
              "tool の結果は message history に戻され、次の推論入力になります。",
        "zh": "所有结果按 tool_use 的顺序，作为一条由 `tool_result` 块组成的 user 消息写回。"
              "`turn_count` 加一，`transition_reason` 变为 \"tool_result\"："
              "工具结果回到消息历史，成为下一次推理的输入。",
    },
    "stop": {
        "en": "The run reached its max turns and was stopped before calling the model again. "
              "The chapter's loop has no such limit; a fuller system keeps a budget like this one.",
        "ja": "max turns に達したため、model をもう一度呼ぶ前に止めました。"
              "この章の loop にはこの上限はありません。高完成度 system では budget として持ちます。",
        "zh": "运行达到最大轮数，在再次调用模型之前停止。"
              "本章的循环没有这种限制；更完整的系统会保留这样的预算。",
    },
}

ONE_SENTENCE = {
    "en": "The tool result goes back into the message history and becomes the next inference input.",
    "ja": "tool の結果は message history に戻され、次の推論入力になる。",
    "zh": "工具结果回到消息历史，成为下一次推理的输入。",
}


def note(stage: str, lang: str = "en") -> str:
    """The note for `stage` in `lang` (English when the language is unknown)."""
    texts = NOTES.get(stage, {})
    return texts.get(lang) or texts.get("en", "")
