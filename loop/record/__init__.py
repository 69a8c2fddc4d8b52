"""`python -m loop record -- COMMAND`: any agent's loop recorded at the wire, the command run as it is.

A recording endpoint on 127.0.0.1 (endpoint.py) stands where the model's API stands: the command is run with
ANTHROPIC_BASE_URL and OPENAI_BASE_URL pointing at it (command.py), and every request it makes is answered by the
same recorder and answerer Your loop uses (loop/yours/recorder.py): the offline scripted model by default, or,
with `--upstream URL`, the real API, the command's own key header passed on untouched and never kept. The stages
are read from the wire as Your loop reads them (loop/yours/reading.py) and printed as they settle (live.py).
"""
