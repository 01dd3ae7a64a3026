"""Reshaping chat messages for servers that take less than the OpenAI request: an instruction appended to the last
user turn, system messages folded into the first user turn."""

from __future__ import annotations


def with_instruction(messages: list[dict[str, str]], instruction: str) -> list[dict[str, str]]:
    """The messages with an instruction added to the last user turn.

    Added to that turn rather than as a new system message: several chat templates (Gemma among
    them) refuse a system message after the first turn or two user turns in a row.
    """
    copied = [dict(message) for message in messages]
    if copied and copied[-1].get("role") == "user":
        copied[-1]["content"] = f"{copied[-1].get('content', '')}\n\n{instruction}"
    else:
        copied.append({"role": "user", "content": instruction})
    return copied


def system_merged(messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """System messages folded into the first user turn, for servers whose template drops them."""
    system = "\n\n".join(m.get("content", "") for m in messages if m.get("role") == "system")
    rest = [dict(m) for m in messages if m.get("role") != "system"]
    if not system:
        return rest
    for message in rest:
        if message.get("role") == "user":
            message["content"] = f"{system}\n\n{message.get('content', '')}"
            return rest
    return [{"role": "user", "content": system}, *rest]
