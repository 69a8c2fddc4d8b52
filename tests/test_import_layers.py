"""An upload is imported in a process of its own (importers/isolated.py), started for every upload: what
`import loop.importers` loads is what each upload waits for before its first byte is read."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def loaded_by(statement: str) -> set[str]:
    """The modules a fresh Python holds after `statement`."""
    done = subprocess.run([sys.executable, "-c", f"{statement}\nimport sys\nprint(*sorted(sys.modules))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return set(done.stdout.split())


def test_importing_the_importers_loads_no_sdk_and_no_engine():
    modules = loaded_by("import loop.importers, loop.importers.isolated")
    assert "loop.importers.derive" in modules  # the importers themselves were loaded
    assert not {"anthropic", "httpx", "httpx2", "loop.runner", "loop.model", "loop.retry"} & modules


def test_the_words_of_the_end_are_the_same_for_a_live_run_and_an_imported_one():
    from loop import endings, narrate, runner
    from loop.importers import derive

    assert runner.why_ended is endings.why_ended is derive.why_ended is narrate.why_ended
    assert runner.GO_ON is endings.GO_ON is derive.GO_ON
