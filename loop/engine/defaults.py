"""What the chapter's agent is told and how long an answer may be, unless a run says otherwise: read by the real
model's client (model.py) and by Your loop, which must start without the SDK (importing it costs a second).
"""

SYSTEM = "You are a coding agent working in a workspace folder. Use bash to solve tasks. Act, don't explain."
MAX_TOKENS = 8000
