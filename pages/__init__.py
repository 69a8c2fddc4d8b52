"""Loopscope's pages (run by st.navigation in app.py) and the small views they share."""
