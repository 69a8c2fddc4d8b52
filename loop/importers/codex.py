"""OpenAI Codex CLI rollouts (placeholder while it is written)."""


def looks_like(records: list) -> bool:
    return False


def read(records, notes):
    raise NotImplementedError
