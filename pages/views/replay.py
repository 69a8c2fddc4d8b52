"""Opening a trace to replay: a built-in sample or an uploaded file in any format the importers read.

A file that cannot be read leaves the current replay as it was and says why.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from loop.text.catalogs import N_
from loop.importers import ImportFailed, Note, import_bytes
from loop.importers.isolated import import_files_isolated, import_isolated

from .blocks import inline_code
from .i18n import choice, lang, t
from .script_run import fragment

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
REPLAY = "replay"
DEFAULT_SAMPLE = "two-tools"


def sample_names() -> list[str]:
    return sorted(p.stem for p in SAMPLES.glob("*.json"))


def sample_path(name: str, language: str) -> Path:
    """A sample recorded in `language` (samples/<lang>/), else the English one."""
    recorded = SAMPLES / language / f"{name}.json"
    return recorded if language != "en" and recorded.is_file() else SAMPLES / f"{name}.json"


def upload_limit() -> int:
    """Bytes an upload may have: the server's own limit (server.maxUploadSize in .streamlit/config.toml, in MB)."""
    try:
        return int(float(st.get_option("server.maxUploadSize")) * 2**20)
    except Exception:
        return 50 * 2**20


def _open(data: bytes, name: str, source: str) -> None:
    # A built-in sample is Loopscope's own; an upload is anyone's: it is read in a process of its own, bounded
    # in memory and time, so one built to be costly cannot take the class server down.
    imported = import_bytes(data, name) if source == "sample" else \
        import_isolated(data, name, max_bytes=upload_limit())
    _keep(imported, name, source)


def _open_many(files: list[tuple[str, bytes]]) -> None:
    """A Claude Code session with its sub-agents' logs (several files, or a zip): one trace, every thread."""
    imported = import_files_isolated(files, max_bytes=upload_limit())
    name = imported.logs[0] if imported.logs else files[0][0]
    _keep(imported, name, "upload")


def _keep(imported, name: str, source: str) -> None:
    # Every thread of a log (sub-agents included) is in the one trace: the history view goes into and out of them.
    # The warnings are kept as notes, said in the page's language when drawn (it may change after the import).
    st.session_state[REPLAY] = {"trace": imported.trace, "format": imported.format,
                                "warnings": list(imported.notes), "name": name, "source": source,
                                "sub_agent_logs": max(len(imported.logs) - 1, 0)}


def said(note: Note, language: str) -> str:
    """An import's warning as Markdown in `language`: its words from the catalog, its data (a file's name, a place,
    an id, the parser's words) as inline code, so a name is never read as Markdown and no English sentence of the
    API or the JSON parser reads as the interface's."""
    return note.render(language, data=lambda value: str(value) if isinstance(value, int) else inline_code(value))


def _open_sample() -> None:
    name = st.session_state.get("replay-sample")
    if name:
        try:
            _open(sample_path(name, lang()).read_bytes(), f"{name}.json", "sample")
        except (OSError, ImportFailed) as exc:  # kept as a Note, said in the page's language when drawn
            st.session_state["replay-error"] = Note(N_("The sample {name} cannot be opened: {error}"), name=name,
                                                    error=exc.note if isinstance(exc, ImportFailed) else str(exc))
        else:
            st.session_state.pop("replay-error", None)


def _css_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def draw_uploader_words() -> None:
    """The file uploader's own words ("Upload", "200MB per file", "Drag and drop files here") in the page's language.

    Streamlit writes them in English whatever the page's language, and has no
    option to change them: the CSS hides its text and shows ours in its place.
    """
    if lang() == "en":
        return
    button = _css_string(t("Open a file"))
    dragging = _css_string(t("Drop the file here"))
    limit = _css_string(t("or drop one here · up to {mb} MB", mb=st.get_option("server.maxUploadSize")))
    zone = '[data-testid="stFileUploaderDropzone"]'
    st.markdown(f"""<style>
{zone} button [data-testid="stMarkdownContainer"] p, {zone} > div:not([data-testid]) > span,
{zone} [data-testid="stFileUploaderDropzoneInstructions"] span {{ font-size: 0 !important; }}
{zone} > div:not([data-testid]) > span::after {{ content: {dragging}; font-size: 1rem; }}
{zone} button [data-testid="stMarkdownContainer"] p::after {{
  content: {button}; font-size: 0.875rem; }}
{zone} [data-testid="stFileUploaderDropzoneInstructions"] span::after {{
  content: {limit}; font-size: 0.875rem; }}
{zone} [data-testid="stFileUploaderDropzoneInstructions"] span {{
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; }}
</style>""", unsafe_allow_html=True)


# The files of one drop (or one pick) replace those of the drop before: Streamlit's uploader keeps adding them, and
# a second session's log beside the first is refused as "several sessions' logs". The page opens only the files just
# added (`_take`), and once they are uploaded removes the old ones with their own delete buttons, as the learner would
# (removed while a new file is still uploading, the uploader may drop the new one too).
ONE_DROP = """<script>(() => {
  if (window.lsOneDrop) return;
  window.lsOneDrop = true;
  const CHIP = '[data-testid="stFileChip"]';
  const replace = (event) => {
    const box = event.target.closest && event.target.closest('[data-testid="stFileUploader"]');
    if (!box || (event.type === "change" && event.target.type !== "file")) return;
    const files = event.type === "drop" ? event.dataTransfer && event.dataTransfer.files : event.target.files;
    const old = box.querySelectorAll(CHIP).length, added = files ? files.length : 0;
    if (!old || !added) return;
    let tries = 0;
    const check = () => {
      const chips = [...box.querySelectorAll(CHIP)];
      const busy = box.querySelector('[data-testid="stFileChipIconSpinner"]');
      if (chips.length >= old + added && !busy) {
        chips.slice(0, old).forEach((chip) => {  // the oldest first: the ones dropped before
          const button = chip.querySelector('[data-testid="stFileChipDeleteBtn"] button');
          if (button) button.click();
        });
      } else if (++tries < 1200) setTimeout(check, 100);
    };
    setTimeout(check, 100);
  };
  document.addEventListener("change", replace, true);
  document.addEventListener("drop", replace, true);
})();"""


def _take(uploads: list | None) -> None:
    """Open the files of the last drop, once, when they arrive; an upload opened empties the sample box.

    Files added beside the ones before are a drop of their own: they are opened alone (the uploader keeps the
    earlier ones until the page removes them: ONE_DROP). Files only removed open nothing."""
    ids = tuple(u.file_id for u in uploads or [])
    before = st.session_state.get("replay-upload-id") or ()
    if not ids:
        st.session_state.pop("replay-upload-id", None)
        st.session_state.pop("replay-upload-error", None)
        return
    if ids == before:
        return
    if set(ids) <= set(before):  # files removed (the ones dropped before): what is replayed stays
        st.session_state["replay-upload-id"] = ids
        return
    uploads = [u for u in uploads if u.file_id not in before]
    named = ", ".join(u.name for u in uploads)
    _open_uploads(uploads, named)
    # Only once they are opened: a run stopped on the way (the next click's) opens them again
    st.session_state["replay-upload-id"] = ids


def _open_uploads(uploads: list, named: str) -> None:
    try:
        if len(uploads) == 1 and not uploads[0].name.lower().endswith(".zip"):
            _open(uploads[0].getvalue(), uploads[0].name, "upload")
        else:
            _open_many([(u.name, u.getvalue()) for u in uploads])
    except ImportFailed as exc:  # kept as a Note, said in the page's language when drawn
        st.session_state["replay-upload-error"] = exc.note
    except Exception as exc:  # an importer's bug must not take the page down
        st.session_state["replay-upload-error"] = Note(N_("{name}: could not be read ({error})"), name=named,
                                                       error=f"{type(exc).__name__}: {exc}")
    else:
        st.session_state.pop("replay-upload-error", None)
        st.session_state["replay-sample"] = None  # the box no longer names a sample: the file is replayed


def draw_openers() -> dict | None:
    """The uploader and the sample picker; returns the replay to show.

    The first visit opens the default sample. An upload is imported once, when it arrives.
    """
    if REPLAY not in st.session_state and DEFAULT_SAMPLE in sample_names():
        st.session_state["replay-sample"] = DEFAULT_SAMPLE  # before the selectbox exists
        _open_sample()
    with st.container(horizontal=True, gap="large"):  # one block, not three: the page redraws it on every click
        uploads = st.file_uploader(
            t("Open a saved transcript"), key="replay-upload", accept_multiple_files=True,
            help=t("A Loopscope transcript (Save transcript), or a log the importers read: Claude Code .jsonl, "
                   "an Anthropic messages list or request body, OpenAI chat, the course's traces. A Claude Code "
                   "session's log can come with its sub-agents' logs (`subagents/agent-….jsonl`): drop them all "
                   "together, or one `.zip` of them."))
        _take(uploads)  # before the sample box: a file opened is what is replayed, no sample is
        st.selectbox(t("A built-in sample"), sample_names(), key="replay-sample", on_change=_open_sample,
                     index=None, placeholder=t("Choose a sample…"))
    draw_uploader_words()
    st.html(ONE_DROP, unsafe_allow_javascript=True)
    for key in ("replay-upload-error", "replay-error"):
        error = st.session_state.get(key)  # a Note: said in the page's language now, not when it happened
        if error:
            st.error(t("**This file cannot be replayed.**") + f" {said(error, lang())}\n\n"
                     + t("The replay below is unchanged."), icon=":material/error:")
    return st.session_state.get(REPLAY)


# -- the sessions folder of the user's own machine, and a session followed as it is written --------------------------

SESSION = "replay-session"  # the path of the session log opened from the folder: it can be followed
FOLLOW = "replay-follow"
FOLLOWER = "replay-follower"
FOLLOW_NOTE = "replay-follow-note"
FOLLOW_EVERY = 0.25  # seconds between two looks at the log's size and time (a stat): a new step is drawn within a second


def _sessions_refused():
    from loop.importers.sessions import refused

    return refused(st.get_option("server.address"))


def draw_sessions() -> None:
    """The sessions of LOOPSCOPE_SESSIONS_DIR, newest first, to open one: only where the operator says the server is
    theirs alone (LOOPSCOPE_LIST_SESSIONS=1) and it serves only this machine.

    Unset, nothing is drawn; set on a server others reach, the page says why the folder is not listed. A name in
    the folder that is not a regular file (a link, a FIFO, a device) is not read: a line says so for each.
    """
    import os

    from loop.importers.sessions import SESSIONS_VARIABLE, listing, size_label

    if not os.environ.get(SESSIONS_VARIABLE):
        return
    refusal = _sessions_refused()
    if refusal is not None:
        st.caption(said(refusal, lang()))
        return
    folder = Path(os.environ[SESSIONS_VARIABLE]).expanduser()
    with st.expander(t("Your sessions ({folder})", folder=str(folder)), expanded=SESSION not in st.session_state):
        try:
            listed = listing(folder)
        except OSError as exc:
            st.caption(said(Note(N_("{name}: cannot read it ({error})"), name=str(folder),
                                 error=exc.strerror or str(exc)), lang()))
            return
        found = listed.sessions
        for note in listed.refused:
            st.caption(said(note, lang()))
        if not found:
            st.caption(t("No session log (.jsonl) in this folder."))
            return

        def label(n: int) -> str:
            s = found[n]
            request = s.first_request or t("(no request in the head of the log)")
            return t("{date} · {project} · {request} · {size} · sub-agents {agents} · compactions {compactions} · "
                     "errors {errors}", date=s.date, project=s.project, request=request, size=size_label(s.size),
                     agents=s.sub_agents, compactions=s.compactions, errors=s.errors)

        st.selectbox(t("A session"), range(len(found)), format_func=label, key=choice("replay-session-choice"))
        st.button(t("Open the session"), key="replay-session-open", on_click=_open_chosen, args=(found,))


def _open_chosen(found: list) -> None:
    n = st.session_state.get("replay-session-choice")
    if n is not None and 0 <= n < len(found):
        _open_session(found[n].path, found[n].folder)


def _open_session(path: Path, folder: Path) -> None:
    """A listed session, read from its folder without following a link, within the upload limit, and a Follower
    that reads it again from there."""
    from loop.importers import import_files
    from loop.importers.follow import Follower
    from loop.importers.sessions import read_session

    try:
        names = list(path.relative_to(folder).parts)
        imported = import_files(read_session(folder, names, upload_limit()), max_bytes=upload_limit())
        follower = Follower(path, folder=folder, max_bytes=upload_limit())
        follower.poll()  # where the log is now: Follow reads what is written after it
    except ImportFailed as exc:  # said by draw_openers, in the page's language
        st.session_state["replay-error"] = exc.note
        return
    except OSError as exc:
        st.session_state["replay-error"] = Note(N_("{name}: could not be read ({error})"), name=path.name,
                                                error=exc.strerror or str(exc))
        return
    _keep(imported, path.name, "session")
    st.session_state[SESSION] = str(path)
    st.session_state[FOLLOWER] = follower
    st.session_state.pop(FOLLOW_NOTE, None)
    st.session_state.pop("replay-error", None)


def draw_follow(replay: dict) -> bool:
    """**Follow**: the session opened from the folder, read again as it is written (only what was appended);
    whether it is on (`follow_poll` looks at the log)."""
    path = st.session_state.get(SESSION)
    if replay.get("source") != "session" or not path:
        return False
    following = st.toggle(t("Follow"), key=FOLLOW, help=t("Read the session's log as it is written: new steps are "
                                                          "drawn as they come; the cursor stays where you put it, "
                                                          "unless it is at the last step."))
    note = st.session_state.get(FOLLOW_NOTE)
    if note:
        st.info(said(note, lang()), icon=":material/alt_route:")
    return following


def follow_poll(replay: dict) -> None:
    """Where Follow looks at the log, drawn last: the page's run has drawn the step before the next look starts."""
    path = st.session_state.get(SESSION)
    if replay.get("source") == "session" and path and st.session_state.get(FOLLOW):
        fragment(_poll, run_every=FOLLOW_EVERY)(path)


def _poll(path: str) -> None:
    replay = st.session_state.get(REPLAY)
    follower = st.session_state.get(FOLLOWER)
    if follower is None or str(follower.path) != path:  # opened from the list only: that made its Follower
        return
    trace = replay["trace"]
    try:
        change = follower.poll(cursor=trace.cursor)
    except ImportFailed as exc:
        st.caption(t("The log cannot be read now: {error}", error=said(exc.note, lang())))
        return
    except OSError as exc:
        st.caption(t("The log cannot be read now: {error}", error=inline_code(exc.strerror or str(exc))))
        return
    if change is None:
        return
    new = change.imported.trace
    new.goto(change.cursor)
    replay.update(trace=new, warnings=list(change.imported.notes),
                  sub_agent_logs=max(len(change.imported.logs) - 1, 0))
    if change.branch_changed:  # a Note: said in the page's language when drawn
        st.session_state[FOLLOW_NOTE] = Note(N_("New records make another branch the conversation, from step {step} "
                                                "on. The cursor stays on the same record."), step=change.first_new + 1)
    st.rerun(scope="app")
