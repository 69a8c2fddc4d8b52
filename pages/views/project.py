"""Your loop's project: several files or a .zip of a folder, the file to run, and a small .env box.

What is given is read and bounded by loop/yours/project.py when it arrives, before anything of it is kept; the file
to run opens in the editor, and Run runs it with the rest of the project beside it, read-only, as `python FILE`
from the project's folder (or `python -m package.module` in a package). The .env box holds NAME=VALUE lines for the
names the program reads from its environment: they go into the sandbox with the run, and nowhere else (not into the
address, nor a transcript: a key's value is hidden from all the run records, and never sent on).
"""

from __future__ import annotations

from typing import Callable

import streamlit as st

from loop.text.catalogs import Note, size_words
from loop.yours.program import FILE_MOST, FILES_MOST, NOT_TEXT, PROJECT_MOST, Program, ProgramError, kind_of, \
    names_read, parse_env_file, text_of
from loop.yours.project import files_of, main_file, project_program

from .blocks import inline_code, plain
from .i18n import lang, t

PROJECT = "yours-project"  # {"files": {path: bytes}, "main": path, "left_out": n}: the project given, if any
UPLOAD = "yours-project-upload"  # the uploader's key's start: a generation after it, a new one empties it
UPLOADED = "yours-project-uploaded"  # the upload ids the project was read from: read once, when they arrive
REFUSED = "yours-project-refused"  # a Note: why the last upload is no project Loopscope runs
MAIN = "yours-project-main"  # the file to run (its picker's value)
ENV = "yours-env"  # the .env box's text: in this session only
GENERATION = "yours-project-generation"
UPLOAD_MB = PROJECT_MOST // 2**20  # a file or a zip as given: no more than a project may hold


def draw_project(source: str, open_file: Callable[[str], None]) -> None:
    """The project box: the files or the zip, the file to run (`open_file(text)` puts it into the editor), the
    .env box and the names the program reads. `source` is the editor's text (the file to run as it is now)."""
    s = st.session_state
    project = s.get(PROJECT)
    with st.expander(t("Your project: several files or a .zip, and a .env"), icon=":material/folder_zip:",
                     expanded=bool(project or s.get(ENV) or s.get(REFUSED))):
        uploads = st.file_uploader(
            t("Your agent's files, or a .zip of its folder"), accept_multiple_files=True, key=uploader_key(),
            max_upload_size=UPLOAD_MB,
            help=t("Your agent file with the modules of its own beside it (a .zip keeps its folders and packages). "
                   "At most {file} a file, {total} and {n} files in all; links and paths outside the folder are "
                   "refused.", file=size_words(FILE_MOST), total=size_words(PROJECT_MOST), n=FILES_MOST))
        _take(uploads, open_file)
        refused = s.get(REFUSED)
        if refused is not None:
            st.error(t("This project cannot be run: {said}", said=plain(refused.render(lang()))),
                     icon=":material/error:")
        project = s.get(PROJECT)
        if project:
            _draw_files(project, open_file)
        st.text_area(t(".env for your program"), key=ENV, height=90, placeholder="MODEL_ID=…\nANTHROPIC_API_KEY=…",
                     help=t("NAME=VALUE lines, as in a .env file: your program finds them in its environment. They "
                            "go into the sandbox with the run only: never into the address or a transcript, and a "
                            "key's value is hidden from everything the run records and never sent on."))
        _draw_names(source, project)


def uploader_key() -> str:
    return f"{UPLOAD}-{st.session_state.get(GENERATION, 0)}"


def _take(uploads, open_file: Callable[[str], None]) -> None:
    """Read an upload once, when it arrives: a project replaces the one before; what cannot be one is said. The
    files taken out of the uploader take the project with them."""
    s = st.session_state
    ids = tuple(u.file_id for u in uploads or [])
    if not ids:
        if s.get(UPLOADED):
            drop_project()
        s.pop(REFUSED, None)
        return
    if s.get(UPLOADED) == ids:
        return
    s[UPLOADED] = ids
    try:
        files, left_out = files_of([(u.name, u.getvalue()) for u in uploads])
        main = main_file(files)
        text = text_of(files[main])
    except ProgramError as exc:
        s[REFUSED] = Note(exc.note, **exc.values)
        return
    except UnicodeDecodeError:
        s[REFUSED] = Note(NOT_TEXT, path=main)
        return
    s.pop(REFUSED, None)
    s[PROJECT] = {"files": files, "main": main, "left_out": left_out}
    s[MAIN] = main
    open_file(text)
    st.rerun()  # the editor above opens the file to run


def _draw_files(project: dict, open_file: Callable[[str], None]) -> None:
    files = project["files"]
    runnable = sorted((p for p in files if p.endswith(".py")), key=lambda p: (p.count("/"), p))
    with st.container(horizontal=True, vertical_alignment="bottom"):
        st.selectbox(t("File to run"), runnable, key=MAIN, on_change=_switch, args=(open_file,), width=320,
                     format_func=str)
        st.button(t("Back to one file"), key="yours-project-drop", icon=":material/close:", on_click=drop_project,
                  help=t("Forget the project: Run runs the editor's file alone again."))
    shown = ", ".join(inline_code(p) for p in sorted(files)[:12]) + (" …" if len(files) > 12 else "")
    st.caption(t("{n} files: the file to run is in the editor; Run runs it with the others beside it, as given.",
                 n=len(files)) + " " + shown)
    if project.get("left_out"):
        st.caption(t("{n} file(s) left out: folders a run has no use for (.git, .venv, __pycache__, …).",
                     n=int(project["left_out"])))


def _switch(open_file: Callable[[str], None]) -> None:
    """Another file to run: the editor's text is kept as the one it was, and the picked one opens in it."""
    s = st.session_state
    project = s.get(PROJECT)
    picked = s.get(MAIN)
    if not project or picked not in project["files"]:
        return
    editing = s.get("yours-source")  # the editor's text (views/yours.py SOURCE): the file it held until now
    if isinstance(editing, str) and project["main"] in project["files"]:
        project["files"][project["main"]] = editing.encode("utf-8")
    project["main"] = picked
    try:
        open_file(text_of(project["files"][picked]))
    except UnicodeDecodeError:
        s[REFUSED] = Note(NOT_TEXT, path=picked)


def _draw_names(source: str, project: dict | None) -> None:
    """The names the program reads from its environment, and which of them Loopscope sets unless the box does."""
    sources = [source] + ([text_of(d) for p, d in project["files"].items() if p.endswith(".py") and
                           p != project["main"] and _text(d)] if project else [])
    read = names_read(sources)
    if not read:
        return
    given = parse_env_file(st.session_state.get(ENV) or "")
    shown = []
    for name in read[:20]:
        shown.append(f"{inline_code(name)} ({_set_by(name, given)})")
    st.caption(t("Your program reads: {names}.", names=", ".join(shown)))


def _set_by(name: str, given: dict) -> str:
    """Who sets a name the program reads: the box, or Loopscope (the model's id, a placeholder key, its model's
    address), or nobody."""
    if name in given:
        return t("yours")
    kind = kind_of(name)
    if kind == "model":
        return t("the offline model")
    if kind == "key":
        return t("a placeholder key")
    if kind == "url":
        return t("Loopscope's model")
    return t("not set")


def _text(data: bytes) -> bool:
    try:
        text_of(data)
    except UnicodeDecodeError:
        return False
    return True


def drop_project() -> None:
    """Forget the project (and empty its uploader): Run runs the editor's one file again."""
    s = st.session_state
    for key in (PROJECT, UPLOADED, REFUSED, MAIN):
        s.pop(key, None)
    s[GENERATION] = s.get(GENERATION, 0) + 1


def runnable(source: str) -> Program:
    """What Run runs: the project with the editor's text as the file to run, or the editor's file alone; with the
    .env box's names set."""
    s = st.session_state
    env = parse_env_file(s.get(ENV) or "")
    text = source.lstrip("\ufeff")
    project = s.get(PROJECT)
    if not project:
        return Program.single(text, env=env)
    return project_program(project["files"], project["main"], text, env)
