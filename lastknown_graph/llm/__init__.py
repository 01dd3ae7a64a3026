"""The LLM client: structured answers, yes-probabilities and text from any OpenAI-compatible endpoint."""

from lastknown_graph.llm.client import LLM, ServerCapabilities
from lastknown_graph.llm.errors import LLMError, LLMOutputError, LLMUnavailableError
from lastknown_graph.llm.protocol import Capabilities, ChatModel, Messages, concurrency_of
from lastknown_graph.llm.usage import Usage, UsageMeter

__all__ = [
    "LLM",
    "Capabilities",
    "ChatModel",
    "LLMError",
    "LLMOutputError",
    "LLMUnavailableError",
    "Messages",
    "ServerCapabilities",
    "Usage",
    "UsageMeter",
    "concurrency_of",
]
