"""A browser's id: issued by the server, signed, so that a made-up or altered id is worth nothing.

An id is `<token>.<signature>`: 16 random bytes, and an HMAC-SHA256 of them
under a key only the server has (kept in the runs store, mode 0600). The runs
store files a browser's runs under `owner(token)`, a hash: the store holds
nothing that could be sent back as an id.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets

from .runs import owner_key

SHAPE = re.compile(r"([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})")  # matched whole (fullmatch)


def _signature(key: bytes, token: str) -> str:
    digest = hmac.new(key, b"loopscope-browser:" + token.encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def issue(key: bytes) -> str:
    """A new id, signed with `key`."""
    token = secrets.token_urlsafe(16)
    return f"{token}.{_signature(key, token)}"


def verify(key: bytes, value: object) -> str | None:
    """The token of `value` when `key` signed it, else None (whatever `value` is)."""
    if not isinstance(value, str) or len(value) > 200:
        return None
    shape = SHAPE.fullmatch(value)
    if shape is None or not hmac.compare_digest(shape.group(2), _signature(key, shape.group(1))):
        return None
    return shape.group(1)


def owner(token: str) -> str:
    """The key this browser's runs are filed under in the store."""
    return owner_key(f"browser:{token}")
