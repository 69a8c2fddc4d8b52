"""What one network address may ask of the server, counted by the address the request really came from.

Two limits, each a bucket of tokens per address that fills at a steady rate (a class arriving at once gets in; a
script that keeps asking is slowed to the rate):

- new browser ids (a browser without the cookie gets one): `new_browsers_a_minute()`, 240 a minute by default and
  never under 120, so that a school behind one address still gets its class in. A script that opens connection
  after connection without the cookie gets no id past it (each id could answer the class's questions).
- wrong class codes: `CODE_TRIES_A_MINUTE` a minute. With codes of 8 letters out of 31, guessing a live class
  takes years (docs/security.md, "A class").

The address: the connection's own, unless the connection came from the balancer in front of the replicas
(`LOOPSCOPE_BALANCER`: its addresses or networks; `deploy/classroom.py` sets it for the replicas it starts), whose
`X-Forwarded-For` then says the browser's address (HAProxy adds it, after removing any the browser sent). A
browser talking to a replica directly cannot name an address of its choosing. IPv6 addresses count by their /64,
the block one machine is given.

Counted in each server process; HAProxy's stick tables (deploy/haproxy.cfg) count new connections across replicas.
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from dataclasses import dataclass
from typing import Callable

BALANCER_VARIABLE = "LOOPSCOPE_BALANCER"
NEW_BROWSERS_VARIABLE, NEW_BROWSERS, NEW_BROWSERS_FLOOR = "LOOPSCOPE_NEW_BROWSERS_A_MINUTE", 240, 120
CODE_TRIES_A_MINUTE = 20  # wrong class codes an address may try a minute
KEYS = 50_000  # addresses remembered at once (the oldest forgotten first)
LOCAL = "local"  # the address of a connection from this machine (Streamlit names none)


def new_browsers_a_minute() -> int:
    """New browser ids an address may be given a minute: LOOPSCOPE_NEW_BROWSERS_A_MINUTE (never under 120), else 240."""
    try:
        value = int(os.environ.get(NEW_BROWSERS_VARIABLE, ""))
    except ValueError:
        return NEW_BROWSERS
    return max(value, NEW_BROWSERS_FLOOR)


def balancers(value: str | None = None) -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    """The networks a balancer's connections come from (LOOPSCOPE_BALANCER: addresses or networks, comma-separated)."""
    value = os.environ.get(BALANCER_VARIABLE, "") if value is None else value
    found = []
    for part in value.split(","):
        try:
            found.append(ipaddress.ip_network(part.strip(), strict=False))
        except ValueError:
            continue
    return found


def _ip(text: str | None):
    try:
        return ipaddress.ip_address((text or "").strip().strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def client_address(peer: str | None, forwarded: list[str], trusted: list | None = None) -> str:
    """The address a browser's requests count under: `peer` (the connection's own; None: this machine), or, when the
    peer is a balancer (`trusted`, else LOOPSCOPE_BALANCER), the last address in its X-Forwarded-For headers."""
    trusted = balancers() if trusted is None else trusted
    ip = _ip(peer) if peer is not None else ipaddress.ip_address("127.0.0.1")
    if ip is not None and any(ip in network for network in trusted if ip.version == network.version):
        said = [part.strip() for header in forwarded for part in header.split(",") if part.strip()]
        forwarded_ip = _ip(said[-1]) if said else None  # the balancer's own addition is the last
        if forwarded_ip is not None:
            ip = forwarded_ip
    if ip is None:
        return str(peer)[:64] if peer else LOCAL
    if ip.version == 6:
        if ip.ipv4_mapped is not None:  # ::ffff:a.b.c.d is that IPv4 address
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


@dataclass
class _Bucket:
    tokens: float
    at: float


class Limit:
    """At most `per_minute()` a minute for each key, with as many at once (a bucket that refills at that rate)."""

    def __init__(self, per_minute: Callable[[], int], clock: Callable[[], float] = time.monotonic, keys: int = KEYS):
        self.per_minute, self.clock, self.keys = per_minute, clock, keys
        self.buckets: dict[str, _Bucket] = {}
        self.lock = threading.Lock()

    def take(self, key: str) -> float:
        """Take one for `key`: 0.0 when allowed, else the seconds until one is."""
        rate = max(1, int(self.per_minute())) / 60.0
        now = self.clock()
        with self.lock:
            bucket = self.buckets.pop(key, None)  # (taken out and put back: the dict keeps the newest last)
            if bucket is None:
                bucket = _Bucket(rate * 60.0, now)
            bucket.tokens = min(rate * 60.0, bucket.tokens + max(0.0, now - bucket.at) * rate)
            bucket.at = now
            self.buckets[key] = bucket
            while len(self.buckets) > self.keys:
                self.buckets.pop(next(iter(self.buckets)))
            if bucket.tokens >= 1.0:
                bucket.tokens -= 1.0
                return 0.0
            return (1.0 - bucket.tokens) / rate

    def left(self, key: str) -> float:
        """The seconds until `key` may take one (0.0: now), without taking it."""
        rate = max(1, int(self.per_minute())) / 60.0
        with self.lock:
            bucket = self.buckets.get(key)
            if bucket is None:
                return 0.0
            tokens = min(rate * 60.0, bucket.tokens + max(0.0, self.clock() - bucket.at) * rate)
        return 0.0 if tokens >= 1.0 else (1.0 - tokens) / rate


NEW_BROWSERS_LIMIT = Limit(new_browsers_a_minute)  # the process's: new browser ids, by address
CODE_TRIES = Limit(lambda: CODE_TRIES_A_MINUTE)  # the process's: wrong class codes, by address
