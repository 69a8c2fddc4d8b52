"""Why an import failed, in words any page's language can say: `ImportFailed` and the reasons it gives."""

from __future__ import annotations

from ..text.catalogs import N_
from .notes import Note

NAMED = N_("{name}: {said}")  # a reason, about the file it names
THE_FILE = N_("the file")
THE_FILES = N_("the files")
UNEXPECTED = N_("{name}: the import failed on something Loopscope did not expect ({error}); please report it with "
                "the file")
CANNOT_READ = N_("{name}: cannot read it ({error})")
OVER_FILES = N_("{n} logs, over the limit of {limit} in one import")
OVER_UPLOAD = N_("{n} files, over the limit of {limit} in one import")
UNZIPPED = N_("{name}: {said} once unzipped")


class ImportFailed(ValueError):
    """The file cannot be read as any known format; the message says why.

    Its reason is a Note (notes.py), `note`, said in any language: `ImportFailed(N_("… {name} …"), name=...)`, or
    a Note made elsewhere. `str()` of it is the English (the command line's).
    """

    def __init__(self, message: str | Note, /, **values: object) -> None:
        self.note = message if isinstance(message, Note) else Note(message, **values)
        super().__init__(self.note.render())


def named(name: object, exc: ImportFailed) -> ImportFailed:
    """`exc`, said about the file `name`."""
    return ImportFailed(NAMED, name=name, said=exc.note)


def listed(names: list[str]) -> Note | str:
    """Up to three names, and how many more: "a, b, c and 4 more"."""
    shown = ", ".join(names[:3])
    return Note(N_("{names} and {n} more"), names=shown, n=len(names) - 3) if len(names) > 3 else shown


def _size(n: int) -> str:
    return f"{n / 1e6:.1f} MB" if n >= 100_000 else f"{n:,} bytes"


def too_big(size: int, limit: int) -> Note:
    """A file (or files) of `size` bytes, over the import's `limit`."""
    return Note(N_("the file is {size}, over the import limit of {limit}; nothing was read (raise the limit with "
                   "max_bytes, or --max-mb on the command line)"), size=_size(size), limit=_size(limit))
