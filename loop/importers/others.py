"""Other agents' files (placeholder while it is written)."""


def named(value):
    return None


def say_text_calls(value, parsed, notes):
    return None
