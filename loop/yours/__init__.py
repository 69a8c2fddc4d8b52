"""Your loop: a learner's own `agent_loop`, run where it can do no harm, recorded from outside, drawn as a trace.

    recording.py   what the channel saw: each request, its response or the API's refusal, the tools run
    listing.py     the chapter's agent_loop, word for word: the page's starting point and the right answer
    inside.py      the bootstrap inside the sandbox: the chapter's names, a client whose transport is the channel
    sandboxed.py   runs a learner's file in the sandbox, answers its channel outside, returns the recording
    reading.py     a recording as a trace, its stages read from what each request holds
    named.py       the first rule the loop broke, named as the Mistakes lab names it, from what the requests show
    watching.py    inside the sandbox: which line of theirs made each message sent, their lists watched line by line
    lines.py       the line of theirs that made the message a broken rule is about, checked against their files
    project.py     a project given to the page (several files, a .zip of a folder), read and bounded
    exercises.py   three exercises, one per closing statement of the chapter, checked on the recordings
"""
