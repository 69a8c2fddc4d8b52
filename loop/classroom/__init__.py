"""The class, as plain Python: a student following a teacher's run (`follower.py`, a state machine whose transitions
say what to draw), the branches a student makes on their own copy (`branches.py`), what the teacher reads when the
class ends (`summary.py`), and the limits on what browsers may ask of a class (`limits.py`). The class's rows in the
runs store are loop/files/classes.py's; the pages (pages/views/following.py, classroom.py) only turn what these say
into widgets and reruns.
"""
