"""A learner's project as the page is given it: several files, or a .zip of its folder, read and bounded here before
anything of it is kept or run, as the command line bounds a project (program.py: 1 MiB a file, 16 MiB and 2,000
files in all).

A zip is read from its directory before a byte of it is expanded: its members' count and the sizes they declare are
checked first, then each is read up to its bound, so a member that expands past what it declares stops there (a zip
bomb with it). A member that is a link, that names a path outside the folder (absolute, with `..`, a drive or a
backslash), or that is encrypted refuses the whole zip. Folders a run has no use for (.git, .venv, __pycache__, …:
program.SKIPPED) are left out, counted, and a folder holding everything else (the one that was zipped) is taken off
the names. A file given alone is known by its own name only.

    files, left_out = files_of([("s01.zip", data)])
    program = project_program(files, main_file(files), editor_text, env)
"""

from __future__ import annotations

import io
import re
import stat
import zipfile
from pathlib import PurePosixPath

from ..text.catalogs import N_, size_words
from .program import FILE_MOST, FILES_MOST, PROJECT_MOST, SKIPPED, Program, ProgramError

ZIP_MOST = PROJECT_MOST  # a zip's own size, as it is given

NOT_A_ZIP = N_("{name} is not a zip Loopscope can open ({error})")
ZIP_LINK = N_("{name}: {member} is a link: a project's zip holds files only")
ZIP_OUTSIDE = N_("{name}: {member} names a place outside the project's folder")
ZIP_LOCKED = N_("{name}: {member} is encrypted")
TOO_MANY = N_("{n} files, more than a project may hold ({most})")
FILE_TOO_LARGE = N_("{path} is larger than {most}: a project's files may be up to that size")
PROJECT_TOO_LARGE = N_("the project is larger than {most}: Loopscope runs projects up to that size")
NO_PYTHON = N_("no Python file among the files given")
TWICE = N_("{path} is given twice")


def files_of(given: list[tuple[str, bytes]]) -> tuple[dict[str, bytes], int]:
    """The project's files (path -> bytes) from what was given (files, or zips of a folder), and how many were left
    out (folders of no use to a run); ProgramError when what was given passes a bound or is no project's."""
    files: dict[str, bytes] = {}
    left_out = 0
    total = 0
    for name, data in given:
        if _is_zip(name, data):
            found, skipped = _unzipped(str(name), data, PROJECT_MOST - total)
            left_out += skipped
        else:
            found = {_own_name(name): data}
        for path, body in found.items():
            if path in files:
                raise ProgramError(TWICE, path=path)
            if len(body) > FILE_MOST:
                raise ProgramError(FILE_TOO_LARGE, path=path, most=size_words(FILE_MOST))
            total += len(body)
            if total > PROJECT_MOST:
                raise ProgramError(PROJECT_TOO_LARGE, most=size_words(PROJECT_MOST))
            files[path] = body
            if len(files) > FILES_MOST:
                raise ProgramError(TOO_MANY, n=len(files), most=FILES_MOST)
    files = _without_top_folder(files)
    if not any(path.endswith(".py") for path in files):
        raise ProgramError(NO_PYTHON)
    return files, left_out


def _is_zip(name: object, data: bytes) -> bool:
    return data[:4] == b"PK\x03\x04" or (str(name).lower().endswith(".zip") and data[:2] == b"PK")


def _own_name(name: object) -> str:
    """A file given alone, known by its own name (a browser's path before it is not the project's)."""
    own = PurePosixPath(str(name).replace("\\", "/")).name
    return own if own not in ("", ".", "..") else "file"


def _unzipped(name: str, data: bytes, room: int) -> tuple[dict[str, bytes], int]:
    if len(data) > ZIP_MOST:
        raise ProgramError(PROJECT_TOO_LARGE, most=size_words(PROJECT_MOST))
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, ValueError, OSError) as exc:
        raise ProgramError(NOT_A_ZIP, name=name, error=str(exc)[:200]) from None
    if len(members) > FILES_MOST * 2:  # folders and left-out files count too, but not without end
        raise ProgramError(TOO_MANY, n=len(members), most=FILES_MOST)
    kept, skipped = [], 0
    for member in members:
        path = member.filename
        if stat.S_ISLNK(member.external_attr >> 16):
            raise ProgramError(ZIP_LINK, name=name, member=path[:200])
        if not _inside(path):
            raise ProgramError(ZIP_OUTSIDE, name=name, member=path[:200])
        if member.is_dir():
            continue
        parts = PurePosixPath(path).parts
        if parts[0] == "__MACOSX" or any(part in SKIPPED for part in parts[:-1]) or parts[-1] == ".DS_Store":
            skipped += 1
            continue
        if member.flag_bits & 0x1:
            raise ProgramError(ZIP_LOCKED, name=name, member=path[:200])
        if member.file_size > FILE_MOST:
            raise ProgramError(FILE_TOO_LARGE, path=path[:200], most=size_words(FILE_MOST))
        kept.append(member)
    if len(kept) > FILES_MOST:
        raise ProgramError(TOO_MANY, n=len(kept), most=FILES_MOST)
    if sum(m.file_size for m in kept) > room:  # said before anything is expanded
        raise ProgramError(PROJECT_TOO_LARGE, most=size_words(PROJECT_MOST))
    out: dict[str, bytes] = {}
    for member in kept:
        try:
            with archive.open(member) as f:
                body = f.read(min(member.file_size, FILE_MOST) + 1)  # a member that lies about its size stops here
        except (zipfile.BadZipFile, NotImplementedError, EOFError, ValueError, RuntimeError, OSError) as exc:
            raise ProgramError(NOT_A_ZIP, name=name, error=str(exc)[:200]) from None
        if len(body) > member.file_size:
            raise ProgramError(NOT_A_ZIP, name=name, error=f"{member.filename[:200]} holds more than it says")
        room -= len(body)
        if room < 0:
            raise ProgramError(PROJECT_TOO_LARGE, most=size_words(PROJECT_MOST))
        out[PurePosixPath(member.filename).as_posix()] = body
    return out, skipped


def _inside(path: str) -> bool:
    """Does a member's name stay inside the folder (relative, no `..`, no drive, no backslash, no NUL)?"""
    if not path or "\\" in path or "\x00" in path or path.startswith("/") or re.match(r"^[A-Za-z]:", path):
        return False
    return ".." not in PurePosixPath(path).parts


def _without_top_folder(files: dict[str, bytes]) -> dict[str, bytes]:
    """The names without a folder that holds every file (the folder that was zipped)."""
    tops = {path.split("/", 1)[0] for path in files}
    if len(tops) == 1 and all("/" in path for path in files):
        top = next(iter(tops))
        return {path[len(top) + 1:]: body for path, body in files.items()}
    return files


def main_file(files: dict[str, bytes]) -> str:
    """The Python file a project most likely runs: one that calls a model and runs as a script, nearest the top."""
    names = sorted((p for p in files if p.endswith(".py")), key=lambda p: (p.count("/"), p))

    def score(path: str) -> int:
        text = files[path][:FILE_MOST].decode("utf-8", "replace")
        return (("__main__" in text) + ("messages" in text) * 2 + ("agent_loop" in text) * 2
                - (PurePosixPath(path).name == "__init__.py") * 10)

    return max(names, key=score)  # max keeps the first of the best: the one nearest the top


def project_program(files: dict[str, bytes], main: str, text: str | None = None, env: dict | None = None) -> Program:
    """The project as a Program: `main` run (its text the editor's `text`, when given), as Python would start it:
    `python -m package.module` from the package's root when it sits in a package, else `python main`."""
    files = dict(files)
    if text is not None:
        files[main] = text.encode("utf-8")
    folder = list(PurePosixPath(main).parts[:-1])
    top = list(folder)
    while top and "/".join(top + ["__init__.py"]) in files:
        top.pop()
    module = None
    if top != folder:  # inside a package: run with -m from the package's root
        module = ".".join(PurePosixPath(main).with_suffix("").parts[len(top):])
    return Program(files, main=main, module=module, path0="/".join(top if module else folder), env=dict(env or {}))
