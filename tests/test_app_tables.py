"""The Pairs and LoopState tables and the history are HTML: whatever a tool or a model printed stays one cell
or one block, shown as text, never run."""

import re
from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from pages.views.tables import cell, html_table
from tests.searches import examples
from tests.tables import html_text, parse


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.text(), min_size=1, max_size=4))
def test_any_text_stays_in_its_own_cell_and_reads_back_as_it_was(texts):
    table = parse(html_table([f"c{i}" for i in range(len(texts))], [[cell(x) for x in texts]]))
    assert list(table.columns) == [f"c{i}" for i in range(len(texts))]
    assert list(table.iloc[0]) == [" ".join(x.split()) for x in texts]  # on one line, nothing else changed


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)


def tags(body: str) -> list[str]:
    parser = _Tags()
    parser.feed(body)
    return parser.tags


def test_html_and_markdown_in_a_result_are_shown_as_text():
    hostile = "a | b :red[alarm] $x^2$ **bold** `code` <b>html</b><script>alert(1)</script> [link](http://x)"
    body = html_table(["result"], [[cell(hostile)]])
    assert "b" not in tags(body) and "script" not in tags(body) and "a" not in tags(body)
    assert parse(body)["result"][0] == hostile


def test_an_id_with_a_pipe_keeps_the_row_whole():
    from pages.views.blocks import id_badge

    table = parse(html_table(["id", "tool"], [[id_badge("toolu_1|2"), cell("x")]]))
    assert list(table.iloc[0]) == ["toolu_1|2", "x"]


def test_a_fence_left_open_by_the_model_does_not_swallow_the_blocks_after_it():
    from pages.views.blocks import content_html

    content = [{"type": "text", "text": "Here is the start:\n```python\nprint(1)"},  # never closed
               {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "echo ```; ls"}},
               {"type": "tool_result", "tool_use_id": "toolu_1", "content": "````\nodd fences\n```"}]
    body = content_html(content)
    blocks = re.findall(r'<div class="ls-block[^"]*">', body)
    assert len(blocks) == 3  # three blocks side by side: the open fence ended with its own block
    text = html_text(body)
    assert "tool_use bash toolu_1" in " ".join(text.split()) and "tool_result" in text
    assert 'echo ```; ls' in text and "````\nodd fences\n```" in text  # commands and output unchanged


def test_a_model_writing_html_gets_text_not_elements():
    from pages.views.blocks import content_html

    body = content_html("Look: <img src=x onerror=alert(1)> and <script>alert(2)</script> **bold**")
    assert "img" not in tags(body) and "script" not in tags(body)
    assert "strong" in tags(body)  # the model's Markdown is still Markdown
    assert "<img src=x onerror=alert(1)>" in html_text(body)


def test_a_tool_input_a_log_kept_as_a_json_string_is_shown_as_json_once():
    from pages.views.blocks import content_html

    given = '{"command": "printf \\"a\\\\nb\\" > f.txt"}'  # the arguments as an OpenAI log holds them: a string
    body = content_html([{"type": "tool_use", "id": "toolu_1", "name": "bash", "input": given}])
    text = html_text(body)
    assert '"command": "printf \\"a\\\\nb\\" > f.txt"' in text  # the JSON as the model wrote it
    assert '\\"command\\"' not in text and '\\\\\\"' not in text  # not a JSON string of that JSON
    raw = content_html([{"type": "tool_use", "id": "toolu_2", "name": "bash", "input": "{not json"}])
    assert "{not json" in html_text(raw) and '"{not json"' not in html_text(raw)  # a raw string as it is


def test_the_line_of_a_model_call_names_the_blocks_as_words_not_a_python_list():
    from loop.files import transcript
    from loop.views.step import view
    from tests.test_app_views import SAMPLES

    trace = transcript.load(SAMPLES / "two-tools.json")
    call = next(i for i, s in enumerate(trace.steps) if s.stage == "call_model")
    for lang, words in (("en", "content text, tool_use, tool_use"), ("ja", "response の block text, tool_use, tool_use")):
        said = view(trace, call, lang).said
        assert words in said and "[" not in said and "'" not in said, said
