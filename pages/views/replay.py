"""Opening a trace to replay: a built-in sample or an uploaded file in any format the importers read.

A file that cannot be read leaves the current replay as it was and says why.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from loop.importers import ImportFailed, import_bytes
from loop.importers.isolated import import_isolated

from .blocks import plain
from .i18n import t

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
REPLAY = "replay"
DEFAULT_SAMPLE = "two-tools"


def sample_names() -> list[str]:
    return sorted(p.stem for p in SAMPLES.glob("*.json"))


def upload_limit() -> int:
    """Bytes an upload may have: the server's own limit (server.maxUploadSize in .streamlit/config.toml, in MB)."""
    try:
        return int(float(st.get_option("server.maxUploadSize")) * 2**20)
    except Exception:
        return 50 * 2**20


def _open(data: bytes, name: str, source: str, thread: str | None = None) -> None:
    # A built-in sample is Loopscope's own; an upload is anyone's: it is read in a process of its own, bounded
    # in memory and time, so one built to be costly cannot take the class server down.
    imported = import_bytes(data, name, thread=thread) if source == "sample" else \
        import_isolated(data, name, thread=thread, max_bytes=upload_limit())
    many = len(imported.threads) > 1
    st.session_state[REPLAY] = {"trace": imported.trace, "format": imported.format,
                                "warnings": list(imported.warnings), "name": name, "source": source,
                                "threads": imported.threads if many else [],
                                "thread": imported.thread if many else None,
                                # kept only when there is another thread to open from it
                                "data": data if many else None}


def draw_thread_picker(replay: dict) -> None:
    """For a Claude Code log with sub-agents: which thread to replay (the main conversation first)."""
    threads = replay.get("threads") or []
    if not threads:
        return
    ids = [th.id for th in threads]
    labels = {th.id: f"{th.label} ({th.n_records} records)" for th in threads}
    current = replay.get("thread") if replay.get("thread") in ids else ids[0]
    chosen = st.selectbox(t("Thread (sub-agents have threads of their own)"), ids, index=ids.index(current),
                          format_func=labels.get, key=f"replay-thread-{replay['name']}")
    if chosen != current:
        try:
            _open(replay["data"], replay["name"], replay["source"], thread=chosen)
        except ImportFailed as exc:
            st.error(plain(exc))
            return
        st.rerun()


def _open_sample() -> None:
    name = st.session_state.get("replay-sample")
    if name:
        try:
            _open((SAMPLES / f"{name}.json").read_bytes(), f"{name}.json", "sample")
        except (OSError, ImportFailed) as exc:
            st.session_state["replay-error"] = f"The sample {name} cannot be opened: {exc}"
        else:
            st.session_state.pop("replay-error", None)


def draw_openers() -> dict | None:
    """The uploader and the sample picker; returns the replay to show.

    The first visit opens the default sample. An upload is imported once, when it arrives.
    """
    if REPLAY not in st.session_state and DEFAULT_SAMPLE in sample_names():
        st.session_state["replay-sample"] = DEFAULT_SAMPLE  # before the selectbox exists
        _open_sample()
    left, right = st.columns([3, 2], gap="large")
    with right:
        st.selectbox(t("A built-in sample"), sample_names(), key="replay-sample", on_change=_open_sample,
                     index=None, placeholder=t("Choose a sample…"))
    with left:
        upload = st.file_uploader(
            t("Open a saved transcript"), key="replay-upload",
            help=t("A Loopscope transcript (Save transcript), or a log the importers read: Claude Code .jsonl, "
                   "an Anthropic messages list or request body, OpenAI chat, the course's traces."))
    if upload is None:
        st.session_state.pop("replay-upload-id", None)
        st.session_state.pop("replay-upload-error", None)
    elif st.session_state.get("replay-upload-id") != upload.file_id:
        st.session_state["replay-upload-id"] = upload.file_id
        try:
            _open(upload.getvalue(), upload.name, "upload")
        except ImportFailed as exc:
            st.session_state["replay-upload-error"] = str(exc)
        except Exception as exc:  # an importer's bug must not take the page down
            st.session_state["replay-upload-error"] = f"{upload.name}: could not be read ({type(exc).__name__}: {exc})"
        else:
            st.session_state.pop("replay-upload-error", None)
    for key in ("replay-upload-error", "replay-error"):
        if st.session_state.get(key):
            st.error(t("**This file cannot be replayed.**") + f" {plain(st.session_state[key])}\n\n"
                     + t("The replay below is unchanged."), icon=":material/error:")
    return st.session_state.get(REPLAY)
