"""What turns a step into words and pictures: the record a page draws for step i (step.py), its parts (parts.py),
the diagram, the narration, the stage notes, the error explanations, the comparison and the mistakes lab."""
