"""Prompts, each beside the pydantic model of its answer. Pure functions: typed input -> chat messages."""
