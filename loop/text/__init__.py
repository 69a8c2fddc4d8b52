"""What any part of Loopscope says: the catalogs of its messages in each language, secrets hidden, terminal-safe text.

At the bottom of the package: every other part may use it, and it uses none of them.
"""
