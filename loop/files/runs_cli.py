"""`python -m loop runs`: the saved runs of every browser, for whoever runs the server.

    python -m loop runs list                    # owner (a hash), run id, steps, ended, saved, task
    python -m loop runs export RUN_ID           # the run as JSON lines (jq reads them; Replay opens them)
    python -m loop runs prune --days 30         # remove runs not written for 30 days

The store is `runs/runs.sqlite3` beside app.py, or in LOOPSCOPE_RUNS (`--store`); with LOOPSCOPE_DATABASE_URL
(postgresql://…), the PostgreSQL database it names.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .database import from_environment
from .runs import RunsStore, StoreError, default_root


def _list(store: RunsStore, args) -> int:
    for owner, run in store.everyone():
        saved = time.strftime("%Y-%m-%d %H:%M", time.localtime(run.modified))
        print(f"{owner[:12]}  {run.id}  {run.steps:4d} steps  {run.ended or 'not ended':10}  {saved}  {run.task[:60]}")
    return 0


def _export(store: RunsStore, args) -> int:
    found = [owner for owner, run in store.everyone() if run.id == args.run_id and owner.startswith(args.owner or "")]
    if len(found) != 1:
        print(f"error: {len(found)} saved runs have the id {args.run_id}"
              + ("; name one with --owner (the first characters of `runs list`'s first column)" if found else ""),
              file=sys.stderr)
        return 1
    text = "\n".join(store.journal(found[0], args.run_id)) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


def _prune(store: RunsStore, args) -> int:
    print(f"removed {store.prune(args.days)} saved run(s) not written for {args.days:g} days")
    return 0


def add_parser(sub) -> None:
    runs = sub.add_parser("runs", help="list, export or prune the saved runs of every browser")
    runs.add_argument("--store", help="the runs folder (default: LOOPSCOPE_RUNS, else runs/ beside app.py); "
                      "with LOOPSCOPE_DATABASE_URL set, that PostgreSQL database is read instead")
    actions = runs.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="every saved run, newest first").set_defaults(act=_list)
    export = actions.add_parser("export", help="one run as JSON lines: its facts, then a step a line")
    export.add_argument("run_id")
    export.add_argument("--owner", help="the first characters of the run's owner, when two browsers used one id")
    export.add_argument("--out", help="write to this file instead of standard output")
    export.set_defaults(act=_export)
    prune = actions.add_parser("prune", help="remove the runs not written for some days")
    prune.add_argument("--days", type=float, required=True)
    prune.set_defaults(act=_prune)
    runs.set_defaults(func=main)


def main(args) -> int:
    try:
        return args.act(RunsStore(args.store or default_root(), url=from_environment()), args)
    except (StoreError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
