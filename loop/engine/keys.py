"""Whose key goes where: the server's API key is sent only to the server's own base URL, within limits.

The server's key (ANTHROPIC_API_KEY, or the page's secrets.toml) belongs with the
server's base URL: ANTHROPIC_BASE_URL of the server's environment, or the API's
default when that is unset. A base URL typed in a browser needs a key typed in
that browser, or a student could point the server's key at a server of their own.

The operator decides whether browsers may use the server's key at all
(LOOPSCOPE_SERVER_KEY) and how much: an `Allowance` counts one browser's calls
and tokens in the runs store, which every replica shares, and the tokens of all
browsers together, so a new cookie starts no new budget. The command line is the
operator's own: it keeps the environment's key and has no allowance.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from dataclasses import dataclass
from typing import Mapping, Protocol
from urllib.parse import urlsplit

from ..text.catalogs import N_

API_DEFAULT = "https://api.anthropic.com"  # the SDK's base URL when ANTHROPIC_BASE_URL is unset
SETTING = "LOOPSCOPE_SERVER_KEY"
CALLS_AN_HOUR = "LOOPSCOPE_KEY_CALLS_AN_HOUR"
TOKENS_A_DAY = "LOOPSCOPE_KEY_TOKENS_A_DAY"
TOKENS_A_DAY_ALL = "LOOPSCOPE_KEY_TOKENS_A_DAY_ALL"

log = logging.getLogger("loopscope.keys")

OWN_URL_OWN_KEY = N_("A Base URL of your own needs an API key of your own: the server's key is sent only to the "
                     "server's own base URL. Type your key, or leave the Base URL as the server has it.")
SERVER_KEY_OFF = N_("This server does not lend its API key ({setting}=off): type an API key of your own, or choose "
                    "the scripted model, which needs none.")
NO_LEDGER = N_("The server's API key cannot be used now: what it spends cannot be counted ({error}). Type an API "
               "key of your own, or choose the scripted model.")
CALLS_REACHED = N_("This browser has made {limit} calls this hour with the server's API key, the most it may "
                   "({setting}). Nothing was sent. It may call again after {resets} UTC, or type an API key of its own.")
TOKENS_REACHED = N_("This browser has used {spent} tokens today with the server's API key; it may use {limit} a day "
                    "({setting}). Nothing was sent. It may call again after {resets} UTC, or type an API key of its own.")
ALL_REACHED = N_("All browsers together have used {spent} tokens today with the server's API key; the server allows "
                 "{limit} a day ({setting}). Nothing was sent. It may be used again after {resets} UTC; an API key of "
                 "your own works now.")


class KeyRefused(RuntimeError):
    """The server's key is not sent; `message` and `values` say why in any language (`str()` is English)."""

    def __init__(self, message: str, **values):
        self.message, self.values = message, values
        super().__init__(message.format(**values))


# -- the rule ----------------------------------------------------------------------

def _normal(url: str | None) -> tuple:
    """(scheme, user info, host, port, path, query, fragment) of `url`, so that equal servers compare equal."""
    parts = urlsplit((url or API_DEFAULT).strip())
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"https": 443, "http": 80}.get(scheme)
    except ValueError:  # a port that is no number: equal to nothing but itself
        port = parts.netloc
    userinfo = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    return scheme, userinfo, (parts.hostname or "").lower(), port, parts.path.rstrip("/"), parts.query, parts.fragment


def server_base_url(environ: Mapping[str, str] | None = None) -> str:
    """The server's own base URL: its ANTHROPIC_BASE_URL, else the API's default."""
    environ = os.environ if environ is None else environ
    return (environ.get("ANTHROPIC_BASE_URL") or "").strip() or API_DEFAULT


def is_server_url(base_url: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Does `base_url` (None or empty: the SDK's choice, the server's own) name the server's own base URL?"""
    if not (base_url or "").strip():
        return True
    return _normal(base_url) == _normal(server_base_url(environ))


def server_key_for(base_url: str | None, key: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The server's `key` if it may go to `base_url`, else None: the one rule every caller applies."""
    return key if key and is_server_url(base_url, environ) else None


# -- the operator's settings -----------------------------------------------------------

@dataclass(frozen=True)
class Limits:
    """What browsers may spend with the server's key (LOOPSCOPE_KEY_*)."""

    calls_an_hour: int = 120  # per browser
    tokens_a_day: int = 1_000_000  # per browser
    tokens_a_day_all: int = 10_000_000  # all browsers together


def lending(environ: Mapping[str, str] | None = None) -> bool:
    """May browsers use the server's key? LOOPSCOPE_SERVER_KEY: `on` (the default) or `off`."""
    environ = os.environ if environ is None else environ
    value = (environ.get(SETTING) or "on").strip().lower()
    if value in ("on", "1", "yes", "true"):
        return True
    if value in ("off", "0", "no", "false"):
        return False
    _warn(SETTING, value, "on")
    return True


def limits(environ: Mapping[str, str] | None = None) -> Limits:
    """The limits the operator set, each a whole number ≥ 0; a bad value is logged and its default used."""
    environ = os.environ if environ is None else environ
    default = Limits()
    return Limits(calls_an_hour=_count(environ, CALLS_AN_HOUR, default.calls_an_hour),
                  tokens_a_day=_count(environ, TOKENS_A_DAY, default.tokens_a_day),
                  tokens_a_day_all=_count(environ, TOKENS_A_DAY_ALL, default.tokens_a_day_all))


def _count(environ: Mapping[str, str], name: str, default: int) -> int:
    raw = (environ.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace(",", "_"))
    except ValueError:
        value = -1
    if value < 0:
        _warn(name, raw, default)
        return default
    return value


@functools.cache  # once a process and value: every click reads the settings
def _warn(name: str, value: str, default) -> None:
    log.warning("%s=%r is not a valid value; using the default, %s", name, value, default)


# -- spending ------------------------------------------------------------------------

class Ledger(Protocol):
    """Where spending is counted (loop/files/runs.py's RunsStore): shared by every replica."""

    def spend_call(self, owner: str, limits: Limits, now: float) -> tuple[str, int] | None: ...

    def spend_tokens(self, owner: str, tokens: int, now: float) -> None: ...


HOUR, DAY = 3600, 86400


@dataclass(frozen=True)
class Allowance:
    """One browser's use of the server's key: checked before every HTTP attempt, charged with what it used.

    Given to a Model (in its ModelConfig) only when the call carries the server's key.
    """

    ledger: Ledger
    owner: str  # the browser's owner key in the runs store
    limits: Limits

    def before_call(self, now: float | None = None) -> None:
        """Count one call, or raise KeyRefused (nothing is sent) when a limit is reached or cannot be checked."""
        now = time.time() if now is None else now
        try:
            reached = self.ledger.spend_call(self.owner, self.limits, now)
        except Exception as exc:  # a locked or unreadable store: no counting, no server key
            raise KeyRefused(NO_LEDGER, error=str(exc)[:200]) from None
        if reached is None:
            return
        which, spent = reached
        if which == "calls":
            raise KeyRefused(CALLS_REACHED, limit=self.limits.calls_an_hour, setting=CALLS_AN_HOUR,
                             resets=_at((now // HOUR + 1) * HOUR))
        if which == "tokens":
            raise KeyRefused(TOKENS_REACHED, spent=spent, limit=self.limits.tokens_a_day, setting=TOKENS_A_DAY,
                             resets=_at((now // DAY + 1) * DAY))
        raise KeyRefused(ALL_REACHED, spent=spent, limit=self.limits.tokens_a_day_all, setting=TOKENS_A_DAY_ALL,
                         resets=_at((now // DAY + 1) * DAY))

    def after_call(self, usage: dict | None, now: float | None = None) -> None:
        """Charge the tokens a response used: input and output, cache writes and reads too."""
        tokens = used_tokens(usage)
        if not tokens:
            return
        try:
            self.ledger.spend_tokens(self.owner, tokens, time.time() if now is None else now)
        except Exception as exc:  # the answer came and is shown; the next call's check refuses if the store is gone
            log.warning("the tokens of a call with the server's key could not be counted: %s", exc)


def used_tokens(usage: dict | None) -> int:
    """Every token a response's `usage` counts."""
    if not isinstance(usage, dict):
        return 0
    names = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    return sum(v for v in (usage.get(n) for n in names) if isinstance(v, int) and not isinstance(v, bool) and v > 0)


def _at(when: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(when))
