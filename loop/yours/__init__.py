"""Your loop: a learner's own `agent_loop`, run where it can do no harm, recorded from outside, drawn as a trace.

    recording.py   what the channel saw: each request, its response or the API's refusal, the tools run
"""
