"""The engine: the chapter's five stages, the runner that steps them, and the layers added around them."""
