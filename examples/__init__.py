"""Runnable examples (``python examples/<name>.py``); each is also run by a test, so none of them can rot."""
