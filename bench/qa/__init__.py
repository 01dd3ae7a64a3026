"""Everyday questions about long-lived users: the memory beside naive RAG, the full history, no memory and mem0.

``python -m bench.qa run`` (see bench/qa/README.md); the users and their questions are in ``bench/qa/data/``.
"""
