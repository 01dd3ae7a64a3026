"""Test doubles for users' tests and ours: never a model, and always named as scripted where they answer.

- ``ScriptedModel``: an in-process ChatModel answering with a function of yours (no HTTP).
- ``HashedEmbedder``: word-hash vectors, no model, no torch.
- ``scripted_server.ScriptedLLMServer``: an OpenAI-compatible HTTP server answering by rules, for tests of the
  HTTP client and end-to-end runs.
"""

from lastknown_graph.testing.hashed_embedder import HashedEmbedder
from lastknown_graph.testing.scripted_model import ModelCall, ScriptedModel, failing

__all__ = ["HashedEmbedder", "ModelCall", "ScriptedModel", "failing"]
