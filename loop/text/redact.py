"""What counts as a secret, in one place: names of variables and settings, and keys quoted in text."""

from __future__ import annotations

import re
from collections.abc import Iterable

# Names are upper-cased first: Streamlit copies secrets.toml's top-level keys into the
# environment as they are written there, often in lower case (`db_password`).
SECRET_SUFFIXES = ("_KEY", "_TOKEN", "_SECRET", "PASSWORD", "_PASSWD", "_PWD", "_CREDENTIALS")
# Anthropic's keys (sk-ant-api03-…) and the other `sk-` keys OpenAI-compatible servers use.
KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")


def secret_name(name: str) -> bool:
    """True for a variable or setting that holds a key, a token, a password or ANTHROPIC_* configuration."""
    upper = name.upper()
    return upper.startswith("ANTHROPIC_") or upper.endswith(SECRET_SUFFIXES)


def without_secrets(value: object) -> object:
    """`value` with every object member whose name is a secret's left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_secrets(v) for k, v in value.items() if not (isinstance(k, str) and secret_name(k))}
    if isinstance(value, (list, tuple)):
        return [without_secrets(v) for v in value]
    return value


HIDDEN = "[API key]"


def redact(text: str, keys: Iterable[str | None] = ()) -> str:
    """`text` with any API key in it cut to its first characters (a server may quote the key it refused), and
    each of `keys` (the exact keys in use, whatever their shape: a proxy's need not start with `sk-`) hidden."""
    text = KEY_PATTERN.sub(lambda m: m.group()[:7] + "…", text)
    for key in sorted({k for k in keys if k and len(k) >= 4}, key=len, reverse=True):
        text = text.replace(key, HIDDEN)
    return text
