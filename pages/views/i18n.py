"""The interface's words in English, Japanese and Chinese: `t("First")` in the language chosen.

Keys are the English text itself, so a view reads as it did and a missing
translation falls back to English (the test with lang=ja finds those). The
Japanese keeps the chapter's terms in Latin letters as the chapter does:
messages, tool_use, tool_result, turn, write-back, loop. The language comes
from the sidebar or `?lang=en|ja|zh`, and is kept in the URL.
"""

from __future__ import annotations

import streamlit as st

from loop.notes import LANGUAGES

LANG = "lang"

TEXT: dict[str, tuple[str, str]] = {  # English: (日本語, 中文)
    # pages and the sidebar
    "Step through": ("ステップ実行", "单步执行"),
    "Replay": ("リプレイ", "回放"),
    "Mistakes lab": ("よくある間違い", "常见错误"),
    "About the loop": ("loop について", "关于循环"),
    "Language": ("言語", "语言"),
    "Step through the loop": ("loop をステップ実行", "单步执行循环"),
    "scripted model (offline, no key)": ("台本 model（オフライン、key 不要）", "脚本模型（离线，无需 key）"),
    "model `{name}`": ("model `{name}`", "模型 `{name}`"),
    "Task: **{task}** · {model} · max turns {turns} · workspace `{workspace}`":
        ("タスク: **{task}** · {model} · 最大 turn 数 {turns} · workspace `{workspace}`",
         "任务：**{task}** · {model} · 最大轮数 {turns} · 工作区 `{workspace}`"),
    "### Next run": ("### 次の実行", "### 下一次运行"),
    "Model": ("Model", "模型"),
    "Scripted (offline, no key)": ("台本 model（オフライン、key 不要）", "脚本模型（离线，无需 key）"),
    "An Anthropic model": ("Anthropic の model", "Anthropic 模型"),
    "Model id": ("Model ID", "模型 ID"),
    "API key": ("API key", "API key"),
    "Kept in this session only; never shown, logged or saved.":
        ("このセッションの中だけに保持し、表示・ログ・保存はしません。", "只保存在本次会话中，从不显示、记录或保存。"),
    " Left empty, the key from {source} is used.": ("空欄なら {source} の key を使います。", "留空则使用 {source} 中的 key。"),
    "using {source}": ("{source} を使用", "使用 {source}"),
    "Base URL": ("Base URL", "Base URL"),
    "Leave empty for Anthropic's API, or give an Anthropic-compatible server.":
        ("空欄なら Anthropic の API、または Anthropic 互換 server を指定します。", "留空则用 Anthropic 的 API，或填写兼容 Anthropic 的服务器。"),
    "Task": ("タスク", "任务"),
    "A task of my own…": ("自分のタスク…", "我自己的任务…"),
    "Your task": ("あなたのタスク", "你的任务"),
    "What Python version is installed?": ("インストールされている Python のバージョンは？", "安装的 Python 是哪个版本？"),
    "Tool timeout (s)": ("tool の制限時間（秒）", "工具超时（秒）"),
    "Max turns": ("最大 turn 数", "最大轮数"),
    "Toolset": ("tool セット", "工具集"),
    "New run": ("新しく実行", "重新运行"),
    "Start again with these settings, in a fresh workspace.":
        ("この設定で、新しい workspace でやり直します。", "用这些设置在新的工作区重新开始。"),
    "Type a task first, or pick a scenario.": ("先にタスクを入力するか、シナリオを選んでください。", "请先输入任务，或选择一个场景。"),
    # saved runs
    "Saved runs · {n}": ("保存した実行 · {n}", "已保存的运行 · {n}"),
    "Every step of a live run is saved on this server for this browser only (the link's `session` keeps it; "
    "share the link and you share the runs). The API key is never saved.":
        ("ライブ実行のステップはすべて、このブラウザ専用としてこの server に保存されます（リンクの `session` が覚えています。"
         "リンクを共有すると実行も共有されます）。API key は保存しません。",
         "实时运行的每一步都保存在这台服务器上，只属于这个浏览器（链接里的 `session` 记住它；分享链接就等于分享这些运行）。"
         "API key 从不保存。"),
    "No other saved runs yet.": ("ほかに保存した実行はまだありません。", "还没有其他已保存的运行。"),
    "No saved runs yet: Step, and this run is saved.": ("保存した実行はまだありません。「進む」を押すと、この実行が保存されます。",
                                                        "还没有已保存的运行：按“下一步”，这次运行就会被保存。"),
    "task": ("タスク", "任务"),
    "model": ("model", "模型"),
    "steps": ("ステップ数", "步数"),
    "ended": ("終了", "结束"),
    "saved": ("保存日時", "保存时间"),
    "Saved run": ("保存した実行", "已保存的运行"),
    "{n} steps": ("{n} ステップ", "{n} 步"),
    "ended: {reason}": ("終了: {reason}", "已结束：{reason}"),
    "not ended": ("未終了", "未结束"),
    "API key for this run": ("この実行の API key", "这次运行的 API key"),
    "The key is never saved with a run: give it again to go on calling the model.":
        ("key は実行と一緒には保存しません。model の呼び出しを続けるには、もう一度入力してください。",
         "key 从不随运行一起保存：再输入一次，才能继续调用模型。"),
    "Resume": ("再開", "恢复"),
    "Delete": ("削除", "删除"),
    "Bring this run back, live: the same trace and cursor; Step goes on.":
        ("この実行をライブに戻します。trace もカーソルもそのままで、「進む」で続きを実行します。",
         "把这次运行恢复为实时：trace 和光标不变；“下一步”接着执行。"),
    "Resumed: {n} steps, at step {k}. The workspace is new (`{workspace}`); files the commands wrote earlier were "
    "copied when still there.":
        ("再開しました: {n} ステップ、ステップ {k} の位置です。workspace は新しいもの（`{workspace}`）です。以前にコマンドが"
         "書いたファイルは、残っていればコピーしました。",
         "已恢复：共 {n} 步，位于第 {k} 步。工作区是新的（`{workspace}`）；之前命令写入的文件如果还在，已复制过来。"),
    "Deleted the saved run {run_id}.": ("保存した実行 {run_id} を削除しました。", "已删除保存的运行 {run_id}。"),
    "The run {run_id} cannot be resumed: {error}": ("実行 {run_id} は再開できません: {error}", "运行 {run_id} 无法恢复：{error}"),
    "This run could not be saved: {error}": ("この実行を保存できませんでした: {error}", "无法保存这次运行：{error}"),
    # scenarios (what each shows)
    "one tool call, then an answer built from its output":
        ("tool 呼び出し 1 回、その出力から答えを作る", "一次工具调用，然后根据输出作答"),
    "two turns: write a file, run it, report what it printed":
        ("2 turn: ファイルを書き、実行し、出力を報告する", "两轮：写文件、运行、报告输出"),
    "a command fails; the model reads the error and recovers":
        ("コマンドが失敗し、model がエラーを読んで立て直す", "命令失败，模型读取错误后恢复"),
    "two tool_use blocks in one response, answered by one user message":
        ("1 つの response に tool_use block が 2 つ、1 つの user message で答える", "一个回复里有两个 tool_use 块，由一条 user 消息回答"),
    "the answer is cut by max_tokens: the loop ends there and says so":
        ("答えが max_tokens で切れる: loop はそこで終わり、そう伝える", "回答被 max_tokens 截断：循环在此结束并说明原因"),
    "bash (the chapter's one tool)": ("bash（この章の唯一の tool）", "bash（本章唯一的工具）"),
    "bash, read_file, write_file, edit_file (the next chapter's file tools)":
        ("bash, read_file, write_file, edit_file（次章のファイル tool）", "bash、read_file、write_file、edit_file（下一章的文件工具）"),
    "Ask before running a tool": ("tool の実行前に確認する", "运行工具前先询问"),
    "Before a tool runs, show the exact command and wait for Run or Deny.":
        ("tool を実行する前に、実際のコマンドを示して「実行」か「拒否」を待ちます。", "运行工具前显示确切的命令，等待“运行”或“拒绝”。"),
    # the approval gate
    "**The model asks to run a tool.** Nothing has run yet: check the command, then choose.":
        ("**model が tool の実行を求めています。** まだ何も実行していません。コマンドを確かめてから選んでください。",
         "**模型请求运行一个工具。** 还没有运行任何东西：检查命令，然后选择。"),
    "Run": ("実行", "运行"),
    "Deny": ("拒否", "拒绝"),
    "Deny writes an is_error tool_result back (\"denied by the user\"), so every tool_use still has its "
    "tool_result and the loop goes on.":
        ("拒否すると is_error の tool_result（\"denied by the user\"）を write-back するので、どの tool_use にも "
         "tool_result があり、loop は続きます。",
         "拒绝会写回一个 is_error 的 tool_result（\"denied by the user\"），每个 tool_use 仍有对应的 tool_result，循环继续。"),
    "Next: **Run** or **Deny** the command above.": ("次: 上のコマンドを **実行** するか **拒否** してください。",
                                                    "下一步：对上面的命令选择 **运行** 或 **拒绝**。"),
    "Stopped before a tool, for your approval: {n} steps": ("tool の前で承認待ち: {n} ステップ", "在工具前停下等待批准：{n} 步"),
    # forks
    "Branch": ("ブランチ", "分支"),
    "Show context growth": ("context の増え方を表示", "显示上下文增长"),
    "Thread (sub-agents have threads of their own)": ("スレッド（sub-agent はそれぞれ別のスレッドを持ちます）",
                                                       "线程（子代理各有自己的线程）"),
    "Branch {n} · the original": ("ブランチ {n} · 元の実行", "分支 {n} · 原始运行"),
    "Branch {n} · step {step}, {what}": ("ブランチ {n} · ステップ {step}、{what}", "分支 {n} · 第 {step} 步，{what}"),
    "edited task": ("タスクを編集", "修改了任务"),
    "edited tool_result": ("tool_result を編集", "修改了 tool_result"),
    "A fork keeps the old branch: choose it here to go back. Save writes them all.":
        ("分岐しても元のブランチは残ります。ここで選べば戻れます。保存するとすべて書き出します。",
         "分叉会保留旧分支：在这里选择即可返回。保存时会写出全部分支。"),
    "Edit this tool_result and continue from here": ("この tool_result を編集して、ここから続ける", "修改这个 tool_result，从这里继续"),
    "Edit the task and continue from here": ("タスクを編集して、ここから続ける", "修改任务，从这里继续"),
    "A new branch starts here; the current one is kept and the branch picker switches back.":
        ("ここから新しいブランチが始まります。今のブランチは残り、ブランチの選択で戻れます。",
         "从这里开始一个新分支；当前分支会保留，可用分支选择器切换回来。"),
    "tool_result content": ("tool_result の内容", "tool_result 的内容"),
    "Continue from here": ("ここから続ける", "从这里继续"),
    # presenter mode
    "Presenter mode": ("プレゼンモード", "演示模式"),
    "Large type, no sidebar, the diagram and the newest messages on one screen; autoplay.":
        ("大きな文字、サイドバーなし、図と最新の messages を 1 画面に。自動再生もできます。", "大字号、无侧边栏，图和最新的 messages 在同一屏；可自动播放。"),
    "Play": ("再生", "播放"),
    "Pause": ("一時停止", "暂停"),
    "Pause between stages (s)": ("段階の間の待ち時間（秒）", "阶段之间的停顿（秒）"),
    "{s} s between stages": ("段階の間 {s} 秒", "阶段间隔 {s} 秒"),
    # more to see
    "#### Context growth · per turn": ("#### context の増え方 · turn ごと", "#### 上下文增长 · 每轮"),
    "No model call yet.": ("まだ model 呼び出しはありません。", "还没有调用模型。"),
    "Every turn sends the whole history again: the messages and the input tokens grow as tool_results are "
    "written back.": ("turn ごとに history 全体をもう一度送ります。tool_result を write-back するたびに messages と入力 token が増えます。",
                      "每一轮都会把整个历史再发送一次：随着 tool_result 写回，messages 和输入 token 不断增长。"),
    "Export this step · Markdown, CSV": ("このステップを書き出す · Markdown, CSV", "导出这一步 · Markdown, CSV"),
    "Markdown": ("Markdown", "Markdown"),
    "LoopState CSV": ("LoopState CSV", "LoopState CSV"),
    "Pairs CSV": ("ペア CSV", "配对 CSV"),
    "The history up to this step, readable in a course page.": ("このステップまでの history を、教材に貼れる形で。",
                                                               "到这一步为止的历史，可直接用于课程页面。"),
    "Stream the answer": ("答えをストリーミング表示", "流式显示回答"),
    "Show the model's text as it arrives (ModelConfig(stream=True)).":
        ("model のテキストを届いた順に表示します（ModelConfig(stream=True)）。", "模型的文字一到就显示（ModelConfig(stream=True)）。"),
    "**Streaming from the model…**": ("**model からストリーミング中…**", "**正在从模型流式接收…**"),
    # replay
    "Replay a run": ("実行をリプレイ", "回放一次运行"),
    "Open a transcript and step through it exactly as in Step through. Nothing is executed: "
    "no model is called and no tool is run.":
        ("transcript を開き、ステップ実行と同じようにたどります。何も実行しません。model も tool も呼びません。",
         "打开一个 transcript，像单步执行一样逐步查看。不执行任何东西：不调用模型，也不运行工具。"),
    "Open a transcript or choose a sample to replay.": ("transcript を開くか、サンプルを選んでください。", "打开一个 transcript，或选择一个示例来回放。"),
    "**Replaying {name}** · format `{format}` · model `{model}`": ("**{name} をリプレイ中** · 形式 `{format}` · model `{model}`",
                                                                  "**正在回放 {name}** · 格式 `{format}` · 模型 `{model}`"),
    "task: {task}": ("タスク: {task}", "任务：{task}"),
    "**{n} warning(s) while importing:**": ("**読み込み時の警告 {n} 件:**", "**导入时有 {n} 条警告：**"),
    "A built-in sample": ("組み込みのサンプル", "内置示例"),
    "Choose a sample…": ("サンプルを選ぶ…", "选择一个示例…"),
    "Open a saved transcript": ("保存した transcript を開く", "打开已保存的 transcript"),
    "A Loopscope transcript (Save transcript), or a log the importers read: Claude Code .jsonl, "
    "an Anthropic messages list or request body, OpenAI chat, the course's traces.":
        ("Loopscope の transcript（transcript を保存）、または読み込めるログ: Claude Code の .jsonl、Anthropic の "
         "messages のリストや request body、OpenAI chat、この講座の trace。",
         "Loopscope 的 transcript（保存 transcript），或导入器能读的日志：Claude Code .jsonl、Anthropic 的 messages "
         "列表或请求 body、OpenAI chat、本课程的 trace。"),
    "**This file cannot be replayed.**": ("**このファイルはリプレイできません。**", "**这个文件无法回放。**"),
    "The replay below is unchanged.": ("下のリプレイは変わっていません。", "下面的回放没有变化。"),
    # the mistakes lab
    "Each mistake is the chapter's loop with one line changed. Both loops really run, through the real SDK against "
    "the offline model, which checks the Messages API's rules as the API does: the error below is the API's own 400 "
    "answer, word for word.":
        ("どの間違いも、この章の loop を 1 か所だけ変えたものです。どちらの loop も本物の SDK でオフライン model に対して実際に動きます。"
         "オフライン model は API と同じく Messages API の規則を確かめるので、下のエラーは API 自身の 400 の答えそのままです。",
         "每个错误都是把本章的循环改动一处。两个循环都通过真实的 SDK 对离线模型真正运行，离线模型像 API 一样检查 Messages API 的规则："
         "下面的错误就是 API 自己的 400 回答，一字不差。"),
    "Mistake": ("間違い", "错误"),
    "**Call {n} refused: HTTP 400 `invalid_request_error`**": ("**呼び出し {n} は拒否されました: HTTP 400 `invalid_request_error`**",
                                                               "**第 {n} 次调用被拒绝：HTTP 400 `invalid_request_error`**"),
    "accepted": ("受理", "已接受"),
    "asks for": ("求めたもの:", "请求："),
    "No such call: this loop had already stopped.": ("この呼び出しはありません。この loop はもう止まっていました。", "没有这次调用：这个循环已经停止。"),
    "**Call {n}** · sent {m} message(s)": ("**呼び出し {n}** · 送った message {m} 件", "**第 {n} 次调用** · 发送了 {m} 条消息"),
    "messages sent at call {n}": ("呼び出し {n} で送った messages", "第 {n} 次调用发送的 messages"),
    "**The fix:**": ("**直し方:**", "**修正：**"),
    "**The broken loop has**": ("**壊れた loop では**", "**错误的循环写的是**"),
    "**The chapter's loop has**": ("**この章の loop では**", "**本章的循环写的是**"),
    "Scenario `{name}`: “{task}”.": ("シナリオ `{name}`:「{task}」。", "场景 `{name}`：“{task}”。"),
    "The broken loop is refused at call {n}; the correct loop ends with `{ended}` after {calls} call(s).":
        ("壊れた loop は呼び出し {n} で拒否されます。正しい loop は {calls} 回の呼び出しのあと `{ended}` で終わります。",
         "错误的循环在第 {n} 次调用被拒绝；正确的循环在 {calls} 次调用后以 `{ended}` 结束。"),
    "The broken loop ends with `{ended}`.": ("壊れた loop は `{ended}` で終わります。", "错误的循环以 `{ended}` 结束。"),
    "#### With the mistake": ("#### 間違いあり", "#### 有错误"),
    "#### The correct loop": ("#### 正しい loop", "#### 正确的循环"),
    "Not appending the assistant response to messages": ("assistant response を messages に append しない", "没有把 assistant 回复追加到 messages"),
    "Not writing the tool_result back (a terminal log)": ("tool_result を write-back しない（端末に出すだけ）", "没有写回 tool_result（只打印到终端）"),
    "Writing the result back with the wrong tool_use_id": ("違う tool_use_id で結果を write-back する", "用错误的 tool_use_id 写回结果"),
    "Putting text before the tool_result blocks": ("tool_result block の前に text を置く", "把文本放在 tool_result 块之前"),
    "Treating max_tokens as \"go on\" like tool_use": ("max_tokens を tool_use と同じく「続ける」と扱う", "把 max_tokens 当作和 tool_use 一样的“继续”"),
    "Appending the results as an assistant message": ("結果を assistant message として append する", "把结果作为 assistant 消息追加"),
    "Append the assistant's response itself before running tools: the next call must see the tool_use it answers.":
        ("tool を実行する前に assistant response 自体を append します。次の呼び出しは、答える相手の tool_use を見られなければなりません。",
         "运行工具之前先追加 assistant 回复本身：下一次调用必须能看到它所回答的 tool_use。"),
    "Write the results into messages as a user message; printing them tells the model nothing.":
        ("結果は user message として messages に書き込みます。print しても model には何も伝わりません。",
         "把结果作为 user 消息写进 messages；打印出来对模型毫无作用。"),
    "Answer each tool_use with its own id: tool_use_id=block.id.": ("各 tool_use にはそれ自身の id で答えます: tool_use_id=block.id。",
                                                                   "用每个 tool_use 自己的 id 回答：tool_use_id=block.id。"),
    "Put the tool_result blocks first in the user message; any text goes after them.":
        ("user message では tool_result block を先に置き、text はそのあとにします。", "在 user 消息里先放 tool_result 块，文本放在后面。"),
    "Only stop_reason == \"tool_use\" continues the loop; max_tokens ends it (the answer was cut).":
        ("loop を続けるのは stop_reason == \"tool_use\" のときだけです。max_tokens なら終わります（答えが切れています）。",
         "只有 stop_reason == \"tool_use\" 才继续循环；max_tokens 会结束它（回答被截断了）。"),
    "tool_results come from the user side: role \"user\", never \"assistant\".":
        ("tool_result は user 側から送ります。role は \"user\" で、\"assistant\" ではありません。",
         "tool_result 来自 user 一侧：role 是 \"user\"，绝不是 \"assistant\"。"),
    # stages
    "1 · user request into messages": ("1 · user の依頼を messages へ", "1 · 用户请求放进 messages"),
    "2 · call the model": ("2 · model を呼ぶ", "2 · 调用模型"),
    "3 · append the assistant response": ("3 · assistant response を append", "3 · 追加 assistant 回复"),
    "4 · stop_reason: go on or end?": ("4 · stop_reason: 続ける？終える？", "4 · stop_reason：继续还是结束？"),
    "4 · run a tool_use": ("4 · tool_use を実行", "4 · 运行一个 tool_use"),
    "5 · write tool_results back": ("5 · tool_result を write-back", "5 · 写回 tool_result"),
    "stopped: max turns": ("停止: 最大 turn 数", "停止：达到最大轮数"),
    # the controls
    "Step {k} of {n} · turn {turn} · {stage}": ("ステップ {k} / {n} · turn {turn} · {stage}",
                                                "第 {k} / {n} 步 · 第 {turn} 轮 · {stage}"),
    "Step 0 of {n} · not started": ("ステップ 0 / {n} · 未開始", "第 0 / {n} 步 · 尚未开始"),
    "First": ("最初", "第一步"),
    "Back": ("戻る", "上一步"),
    "Step": ("進む", "下一步"),
    "Run to end": ("最後まで", "运行到底"),
    "Replay: jump to the last step.": ("リプレイ: 最後のステップへ移ります。", "回放：跳到最后一步。"),
    "Execute stages until the loop ends or max turns stops it.":
        ("loop が終わるか最大 turn 数で止まるまで実行します。", "一直执行，直到循环结束或达到最大轮数。"),
    "The loop has ended: **{why}**.": ("loop は終了しました: **{why}**。", "循环已结束：**{why}**。"),
    "Next, **Step** executes *{stage}*.": ("次の **進む** で *{stage}* を実行します。", "下一次 **下一步** 将执行 *{stage}*。"),
    "Moving the cursor runs nothing: every step is already recorded.":
        ("カーソルを動かしても何も実行しません。どのステップも記録済みです。", "移动光标不会执行任何东西：每一步都已记录。"),
    "The last recorded step.": ("記録された最後のステップです。", "已记录的最后一步。"),
    "Running {stage}…": ("{stage} を実行中…", "正在执行 {stage}…"),
    "Retrying {stage}…": ("{stage} を再試行中…", "正在重试 {stage}…"),
    "Running the loop to its end…": ("loop を最後まで実行中…", "正在把循环运行到底…"),
    "starting": ("開始", "开始"),
    "step {k} · turn {turn} of at most {turns}": ("ステップ {k} · turn {turn}（最大 {turns}）", "第 {k} 步 · 第 {turn} 轮（最多 {turns} 轮）"),
    "Ran to the end: {n} steps": ("最後まで実行: {n} ステップ", "已运行到底：{n} 步"),
    "Stopped by an error after {n} steps": ("{n} ステップ目のあとエラーで停止", "{n} 步之后因错误停止"),
    "**{stage} failed.**": ("**{stage} に失敗しました。**", "**{stage} 失败。**"),
    "The trace is unchanged: nothing was added. **Retry** repeats this stage.":
        ("trace は変わっていません（何も追加されていません）。**再試行** でこの段階をやり直します。",
         "trace 没有变化：什么都没有添加。**重试** 会重复这一阶段。"),
    "Retry": ("再試行", "重试"),
    # the step view
    "#### The loop": ("#### loop", "#### 循环"),
    "#### What this stage does": ("#### この段階でしていること", "#### 这一阶段做什么"),
    "Save transcript": ("transcript を保存", "保存 transcript"),
    "Loopscope's transcript format: open it again on the Replay page.":
        ("Loopscope の transcript 形式です。リプレイのページで開けます。", "Loopscope 的 transcript 格式：可在回放页面再次打开。"),
    # the history
    "The history exactly as the model will see it on its next call.":
        ("次の呼び出しで model が見るとおりの history です。", "模型下一次调用时看到的历史，原样呈现。"),
    "Show earlier": ("前を表示", "显示更早的"),
    "Show later": ("後を表示", "显示更晚的"),
    "Showing messages[{start}] to messages[{end}] of {total}; {earlier} earlier not drawn.":
        ("{total} 件中 messages[{start}] から messages[{end}] を表示。それより前の {earlier} 件は省略。",
         "共 {total} 条，显示 messages[{start}] 到 messages[{end}]；更早的 {earlier} 条未显示。"),
    "messages is empty. Press **Step**: stage 1 puts the user's request into it.":
        ("messages は空です。**進む** を押すと、段階 1 で user の依頼が入ります。", "messages 是空的。按 **下一步**：第 1 阶段会把用户请求放进去。"),
    "added by this step": ("このステップで追加", "本步新增"),
    "{n} tool_result(s), written back by the loop": ("tool_result {n} 個、loop が write-back したもの", "{n} 个 tool_result，由循环写回"),
    "**Received, not yet appended** · stop_reason `{stop}`": ("**受け取ったが、まだ append していない** · stop_reason `{stop}`",
                                                            "**已收到，尚未追加** · stop_reason `{stop}`"),
    "Stage 3 appends this response to messages. Leave it out and the next turn loses its context.":
        ("段階 3 でこの response を messages に append します。落とすと次の turn は context を失います。",
         "第 3 阶段把这个回复追加到 messages。省掉它，下一轮就会丢失上下文。"),
    "**{n} tool_result(s) collected, not yet written back**": ("**tool_result を {n} 個集めたが、まだ write-back していない**",
                                                               "**已收集 {n} 个 tool_result，尚未写回**"),
    "Stage 5 writes them back as ONE user message; until then the model cannot see them.":
        ("段階 5 で 1 つの user message として write-back します。それまで model には見えません。",
         "第 5 阶段把它们作为一条 user 消息写回；在那之前模型看不到它们。"),
    ":material/output: **tool_result** for {badge}": (":material/output: **tool_result** · {badge} への答え",
                                                      ":material/output: **tool_result** · 回答 {badge}"),
    "**{kind}** block, shown raw": ("**{kind}** block（そのまま表示）", "**{kind}** 块（原样显示）"),
    "… {n} more characters (see Raw)": ("… 残り {n} 文字（Raw JSON を参照）", "… 还有 {n} 个字符（见 Raw JSON）"),
    # the tables
    "#### Pairs · tool_use ↔ tool_result": ("#### ペア · tool_use ↔ tool_result", "#### 配对 · tool_use ↔ tool_result"),
    "Every tool_use needs a tool_result with the same id in the very next (user) message. "
    "The id's colour is the same here and in the history.":
        ("どの tool_use にも、すぐ次の（user）message に同じ id の tool_result が必要です。id の色はここと history で同じです。",
         "每个 tool_use 都需要在紧接着的（user）消息里有同一 id 的 tool_result。id 的颜色在这里和历史中一致。"),
    "No tool_use yet.": ("まだ tool_use はありません。", "还没有 tool_use。"),
    "{shown} of {total} rows: the newest, and those that break a rule.":
        ("{total} 行中 {shown} 行：新しい行と、規則に反する行。", "共 {total} 行中的 {shown} 行：最新的行和违反规则的行。"),
    "All {total} rows.": ("全 {total} 行。", "全部 {total} 行。"),
    "Show all pairs": ("すべてのペアを表示", "显示全部配对"),
    "#### LoopState · after each step": ("#### LoopState · 各ステップのあと", "#### LoopState · 每一步之后"),
    "Now": ("現在", "当前"),
    "No steps yet.": ("まだステップはありません。", "还没有步骤。"),
    "Steps {a}–{b} of {n}, around the current one (▶).": ("{n} ステップ中 {a}–{b}（現在 ▶ の前後）。", "共 {n} 步中的第 {a}–{b} 步（当前 ▶ 前后）。"),
    # the raw JSON
    "Raw JSON · the request sent and the response received": ("Raw JSON · 送った request と受け取った response",
                                                              "Raw JSON · 发送的请求与收到的回复"),
    "Nothing has been sent yet.": ("まだ何も送っていません。", "还没有发送任何东西。"),
    "This step ({stage}) did its work locally; what it recorded is below.":
        ("このステップ（{stage}）は手元で処理しました。記録した内容は下のとおりです。", "这一步（{stage}）在本地完成；记录的内容如下。"),
    "No model call yet at this step.": ("このステップまでに model 呼び出しはありません。", "到这一步还没有调用模型。"),
    "**The last model call, step {n}:**": ("**直前の model 呼び出し、ステップ {n}:**", "**最近一次模型调用，第 {n} 步：**"),
    "**Request** (body sent to `/v1/messages`; the key travels in a header and is not here)":
        ("**Request**（`/v1/messages` に送った body。key は header で送るのでここにはありません）",
         "**请求**（发送到 `/v1/messages` 的 body；key 在 header 中发送，不在这里）"),
    "The body is {n} characters; the middle messages are left out below.":
        ("body は {n} 文字あります。下では途中の messages を省略しています。", "body 共 {n} 个字符；下面省略了中间的 messages。"),
    "Download the exact request body": ("request body をそのままダウンロード", "下载完整的请求 body"),
    "**Response**": ("**受け取った response**", "**回复**"),
    # the diagram's labels (loop/diagram.py)
    "1 · user request\ninto messages": ("1 · user request を\nmessages へ", "1 · 用户请求\n放入 messages"),
    # "2 · call the model" is the stage's own title, under "# stages" above
    "3 · append the\nassistant response": ("3 · assistant response\nを append", "3 · 追加\nassistant 回复"),
    "4 · stop_reason\n== tool_use?": ("4 · stop_reason\n== tool_use?", "4 · stop_reason\n== tool_use?"),
    "4 · run each tool_use,\ncollect its tool_result": ("4 · tool_use を実行し\ntool_result を集める",
                                                        "4 · 运行每个 tool_use，\n收集 tool_result"),
    "5 · write tool_results\nback into messages": ("5 · tool_result を\nmessages へ write-back",
                                                    "5 · 把 tool_result\n写回 messages"),
    "the loop ends": ("loop 終了", "循环结束"),
    "yes": ("はい", "是"),
    "no": ("いいえ", "否"),
    "next tool_use": ("次の tool_use", "下一个 tool_use"),
    "next turn": ("次の turn", "下一轮"),
    "max turns": ("max turns", "最大轮数"),
}
INDEX = {"ja": 0, "zh": 1}


def lang() -> str:
    """The language chosen: en, ja or zh."""
    value = st.session_state.get(LANG)
    return value if value in LANGUAGES else "en"


def t(text: str, _in: str | None = None, **values) -> str:
    """`text` in the chosen language (or `_in`), with `values` filled in; English when there is no translation.

    A widget's format_func passes `_in`: it may be called outside the script run, where the session is not known.
    """
    n = INDEX.get(_in or lang())
    words = TEXT[text][n] if n is not None and text in TEXT else text
    return words.format(**values) if values else words


def stage_title(stage: str | None) -> str:
    from loop.trace import STAGE_TITLES

    return t(STAGE_TITLES.get(stage or "", stage or ""))


def follow_url() -> None:
    """Take `?lang=` from the URL, and keep a chosen language in it (a page change drops the URL's parameters)."""
    given = st.query_params.get(LANG)
    if given in LANGUAGES and given != st.session_state.get(LANG):
        st.session_state[LANG] = given
    chosen = lang()
    if chosen != "en" and given != chosen:
        st.query_params[LANG] = chosen


def _chosen() -> None:
    if lang() == "en":
        st.query_params.pop(LANG, None)
    else:
        st.query_params[LANG] = lang()


def draw_language_picker() -> None:
    """The language switch, at the bottom of the sidebar on every page."""
    if LANG not in st.session_state:
        st.session_state[LANG] = "en"
    with st.sidebar:
        st.segmented_control(t("Language"), list(LANGUAGES), key=LANG, format_func=LANGUAGES.get,
                             on_change=_chosen, selection_mode="single")
