"""Small rendering functions the pages share; each draws one view of (trace, cursor)."""
