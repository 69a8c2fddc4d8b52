"""Opening a trace to replay: a built-in sample or an uploaded file in any format the importers read.

A file that cannot be read leaves the current replay as it was and says why.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from loop.importers import ImportFailed, import_bytes, import_files

from .i18n import t

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
REPLAY = "replay"
DEFAULT_SAMPLE = "two-tools"


def sample_names() -> list[str]:
    return sorted(p.stem for p in SAMPLES.glob("*.json"))


def _open(data: bytes, name: str, source: str) -> None:
    _keep(import_bytes(data, name), name, source)


def _open_many(files: list[tuple[str, bytes]]) -> None:
    """A Claude Code session with its sub-agents' logs (several files, or a zip): one trace, every thread."""
    imported = import_files(files)
    name = imported.trace.meta.get("imported", {}).get("source") or files[0][0]
    _keep(imported, name, "upload")


def _keep(imported, name: str, source: str) -> None:
    st.session_state[REPLAY] = {"trace": imported.trace, "format": imported.format,
                                "warnings": list(imported.warnings), "name": name, "source": source}


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
        uploads = st.file_uploader(
            t("Open a saved transcript"), key="replay-upload", accept_multiple_files=True,
            help=t("A Loopscope transcript (Save transcript), or a log the importers read: Claude Code .jsonl, "
                   "an Anthropic messages list or request body, OpenAI chat, the course's traces. A Claude Code "
                   "session's log can come with its sub-agents' logs (`subagents/agent-….jsonl`): drop them all "
                   "together, or one `.zip` of them."))
    ids = tuple(u.file_id for u in uploads or [])
    if not ids:
        st.session_state.pop("replay-upload-id", None)
        st.session_state.pop("replay-upload-error", None)
    elif st.session_state.get("replay-upload-id") != ids:
        st.session_state["replay-upload-id"] = ids
        named = ", ".join(u.name for u in uploads)
        try:
            if len(uploads) == 1 and not uploads[0].name.lower().endswith(".zip"):
                _open(uploads[0].getvalue(), uploads[0].name, "upload")
            else:
                _open_many([(u.name, u.getvalue()) for u in uploads])
        except ImportFailed as exc:
            st.session_state["replay-upload-error"] = str(exc)
        except Exception as exc:  # an importer's bug must not take the page down
            st.session_state["replay-upload-error"] = f"{named}: could not be read ({type(exc).__name__}: {exc})"
        else:
            st.session_state.pop("replay-upload-error", None)
    for key in ("replay-upload-error", "replay-error"):
        if st.session_state.get(key):
            st.error(t("**This file cannot be replayed.**") + f" {st.session_state[key]}\n\n"
                     + t("The replay below is unchanged."), icon=":material/error:")
    return st.session_state.get(REPLAY)
