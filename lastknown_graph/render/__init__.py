"""Renderings of a user's memory for people (the HTML timeline)."""
