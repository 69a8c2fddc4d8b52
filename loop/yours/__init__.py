"""Your loop: a learner's own `agent_loop`, run where it can do no harm, recorded from outside, drawn as a trace.

    recording.py   what the channel saw: each request, its response or the API's refusal, the tools run
    reading.py     the recording read into the trace Step through draws: read(recording) -> Yours
    named.py       the first rule it broke, by the Mistakes lab's name: named(recording) -> Named | None
"""
