"""The Pairs and LoopState tables are Markdown: whatever a tool printed must stay one cell, shown as it is."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from pages.views.tables import badge_cell, cell, markdown_table
from tests.tables import parse


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=4))
def test_any_text_stays_in_its_own_cell_and_reads_back_as_it_was(texts):
    table = parse(markdown_table([f"c{i}" for i in range(len(texts))], [[cell(x) for x in texts]]))
    assert list(table.columns) == [f"c{i}" for i in range(len(texts))]
    assert list(table.iloc[0]) == [" ".join(x.split()) for x in texts]  # on one line, nothing else changed


def test_markdown_directives_and_latex_in_a_result_are_not_interpreted():
    hostile = "a | b :red[alarm] $x^2$ **bold** `code` <b>html</b> [link](http://x) :material/home:"
    text = cell(hostile)
    assert not re.search(r"(?<!\\)[|:\[\]$*`<>]", text)  # every character Markdown would act on is escaped
    assert parse(markdown_table(["result"], [[text]]))["result"][0] == hostile


def test_an_id_with_a_pipe_keeps_the_row_whole():
    row = [badge_cell("toolu_1|2"), cell("x")]
    table = parse(markdown_table(["id", "tool"], [row]))
    assert list(table.iloc[0]) == ["toolu_1|2", "x"]


def test_a_fence_left_open_by_the_model_does_not_swallow_the_blocks_after_it():
    from markdown_it import MarkdownIt

    from pages.views.blocks import content_markdown

    content = [{"type": "text", "text": "Here is the start:\n```python\nprint(1)"},  # never closed
               {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo ```; ls"}},
               {"type": "tool_result", "tool_use_id": "toolu_1", "content": "````\nodd fences\n```"}]
    tokens = MarkdownIt("commonmark").parse(content_markdown(content))  # a CommonMark parser, as the browser's
    code = [tok.content for tok in tokens if tok.type == "fence"]
    prose = " ".join(tok.content for tok in tokens if tok.type == "inline")
    assert "**tool_use**" in prose and "**tool_result**" in prose  # both headings outside any code block
    assert code == ["print(1)\n", '{\n  "command": "echo ```; ls"\n}\n', "````\nodd fences\n```\n"]  # unchanged
