"""What a learner runs: their file, the folder around it, and how Python would start it.

A file typed into the page is one file, `your_loop.py`. A file named on the command line brings its project:
the folder `python -m loop yours` is run from when the file is inside it (so `from tools import run_bash`
finds tools.py, and python-dotenv finds the project's `.env`), else the file's own folder. A file inside a
package (folders holding `__init__.py`, found by walking up) runs as `python -m package.module` from the
package's root, so its relative imports work; any other file as `python FILE`, its folder first on sys.path.

The project is copied into the sandbox, bounded: files of at most 1 MiB, 16 MiB and 2,000 files in all,
without version control, virtual environments and caches. A byte-order mark is accepted, as Python accepts it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..text.catalogs import N_
from ..text.redact import secret_name

MAIN = "your_loop.py"  # the page's one file
FILE_MOST = 2**20
PROJECT_MOST = 16 * 2**20
FILES_MOST = 2000
SOURCE_MOST = 2**20  # the file run: read and compiled outside the sandbox first
KEPT_MOST = 2**20  # the project's other Python files kept with a run
SKIPPED = {".git", ".hg", ".svn", ".venv", "venv", "env", "node_modules", "__pycache__", ".mypy_cache",
           ".pytest_cache", ".ruff_cache", ".tox", ".idea", ".vscode", "site-packages", "dist", "build"}

TOO_LARGE = N_("{path} is larger than {most}: Loopscope runs files up to that size")
NOT_TEXT = N_("{path} is not UTF-8 text")


class ProgramError(ValueError):
    """The file cannot be run as it is (its size, its bytes): `note` and `values` say why in any language."""

    def __init__(self, note: str, **values):
        self.note, self.values = note, values
        super().__init__(note.format(**values))


@dataclass
class Program:
    """A learner's program: its files (path in the project -> bytes), the one run, and how it is started."""

    files: dict[str, bytes]
    main: str = MAIN  # the file run, as the project names it (agents/s01_agent_loop.py)
    module: str | None = None  # set when it runs as `python -m module` (a file in a package)
    path0: str = ""  # the folder first on sys.path, in the project ("": its root)
    env: dict[str, str] = field(default_factory=dict)  # names the learner sets (--env, --env-file)
    left_out: int = 0  # files of the project not copied (past the bounds)

    @property
    def source(self) -> str:
        return text_of(self.files[self.main])

    @classmethod
    def single(cls, source: str, env: dict | None = None) -> "Program":
        """The page's one file."""
        return cls({MAIN: source.encode("utf-8")}, env=dict(env or {}))

    @classmethod
    def from_file(cls, path: str | Path, cwd: str | Path | None = None, env: dict | None = None) -> "Program":
        """A file on disk, with its project (see the module's doc); ProgramError or OSError when it cannot be read."""
        file = Path(path).resolve()
        data = file.read_bytes()[:SOURCE_MOST + 1]
        if len(data) > SOURCE_MOST:
            raise ProgramError(TOO_LARGE, path=str(path), most="1 MiB")
        try:
            text_of(data)
        except UnicodeDecodeError:
            raise ProgramError(NOT_TEXT, path=str(path)) from None
        here = Path(cwd or os.getcwd()).resolve()
        top = file.parent
        while (top / "__init__.py").is_file() and top.parent != top:  # the package's root is above its top folder
            top = top.parent
        root = here if here == top or here in top.parents else top
        files, left_out = _copied(root, file)
        main = file.relative_to(root).as_posix()
        module = None
        if top != file.parent:  # inside a package: run with -m from the package's root
            module = ".".join(file.relative_to(top).with_suffix("").parts)
            path0 = top.relative_to(root).as_posix()
        else:
            path0 = file.parent.relative_to(root).as_posix()
        return cls(files, main=main, module=module, path0=path0 if path0 != "." else "", env=dict(env or {}),
                   left_out=left_out)

    def other_sources(self) -> dict[str, str]:
        """The project's other Python files as text, kept with the run (a saved run draws them beside its steps):
        KEPT_MOST bytes in all at most, Python files only (never a .env)."""
        out, total = {}, 0
        for name, data in self.files.items():
            if name == self.main or not name.endswith(".py") or total + len(data) > KEPT_MOST:
                continue
            try:
                out[name] = text_of(data)
            except UnicodeDecodeError:
                continue
            total += len(data)
        return out

    def secrets(self) -> list[str]:
        """What a run must never record nor send on: the values the learner set for a key's, a token's or a
        secret's name (--env, the page's .env box), and those of the project's .env files."""
        found = [value for name, value in self.env.items() if kind_of(name) == "key" or secret_name(name)]
        for name, data in self.files.items():
            if name.rsplit("/", 1)[-1].startswith(".env"):
                try:
                    read = parse_env_file(text_of(data))
                except UnicodeDecodeError:
                    continue
                found += [value for key, value in read.items() if kind_of(key) == "key" or secret_name(key)]
        return sorted({v for v in found if len(v) >= 4 and v != PLACEHOLDER}, key=len, reverse=True)

    def sources(self) -> list[str]:
        """The Python files' texts (where the names it reads from the environment are looked for)."""
        out = []
        for name, data in self.files.items():
            if name.endswith(".py"):
                try:
                    out.append(text_of(data))
                except UnicodeDecodeError:
                    continue
        return out


def text_of(data: bytes) -> str:
    """A file's text as Python reads it: UTF-8, a byte-order mark left out."""
    return data.decode("utf-8-sig")


def _copied(root: Path, main: Path) -> tuple[dict[str, bytes], int]:
    """The project's files under `root`, bounded (the module's doc); the file run always among them."""
    files: dict[str, bytes] = {main.relative_to(root).as_posix(): main.read_bytes()}
    total, left_out = len(files[next(iter(files))]), 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED and not os.path.islink(os.path.join(folder, d)))
        for name in sorted(names):
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            if relative in files or path.is_symlink() or not path.is_file():
                continue
            try:
                size = path.stat().st_size
            except OSError:
                continue
            if size > FILE_MOST or total + size > PROJECT_MOST or len(files) >= FILES_MOST:
                left_out += 1
                continue
            try:
                files[relative] = path.read_bytes()
            except OSError:
                left_out += 1
                continue
            total += size
    return files, left_out


# -- the environment it expects ------------------------------------------------------------------------------------

READS = re.compile(r"""(?:environ\s*\[\s*|getenv\s*\(\s*|environ\.get\s*\(\s*|environ\.setdefault\s*\(\s*)"""
                   r"""(["'])([A-Za-z_][A-Za-z0-9_]*)\1""")
PLACEHOLDER = "sk-loopscope-placeholder-never-leaves-the-sandbox"
BASE_URL = "https://model.loopscope.invalid"
# The names the SDKs read by themselves when a client is made without a key: set too, or `Anthropic()` fails.
SDK_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


def names_read(sources: list[str]) -> list[str]:
    """The environment variables the sources read (os.environ[...], os.getenv(...), .get(...)), in order."""
    found: list[str] = []
    for source in sources:
        for match in READS.finditer(source):
            if match.group(2) not in found:
                found.append(match.group(2))
    return found


def kind_of(name: str) -> str | None:
    """What a variable's name says it holds: "url", "key", "model", or None (left unset)."""
    upper = name.upper()
    if any(word in upper for word in ("URL", "ENDPOINT", "API_BASE", "BASE_URI", "HOST")):
        return "url"
    if any(word in upper for word in ("KEY", "TOKEN", "SECRET")):
        return "key"
    if "MODEL" in upper:
        return "model"
    return None


def environment(program: Program, model: str) -> dict[str, str]:
    """The variables set for the program: the model, key and base-URL names its files read (the model's id, a
    placeholder key that never leaves the sandbox, Loopscope's model), the SDKs' own key names, then what the
    learner set (which wins)."""
    env = {name: PLACEHOLDER for name in SDK_KEYS}
    for name in names_read(program.sources()):
        kind = kind_of(name)
        if kind == "url":
            env[name] = BASE_URL + ("/v1" if "OPENAI" in name.upper() else "")
        elif kind == "key":
            env[name] = PLACEHOLDER
        elif kind == "model":
            env[name] = model
    env.update(program.env)
    return env


def parse_env_file(text: str) -> dict[str, str]:
    """NAME=VALUE lines (a .env file's), comments and blank lines left out, `export ` and quotes taken off."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.removeprefix("export ").partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.strip()):
            out[name.strip()] = value
    return out
