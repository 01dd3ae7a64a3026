"""Answer models as JSON schemas in the form strict structured-output servers accept, and the same schema as a
prompt instruction for servers without a JSON mode."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

# "default": a strict server asks for every field anyway. Length bounds: llama.cpp compiles them into
# grammar rules and a bound such as maxLength 1200 exceeds its limits (llama-cpp-python 0.3.36 then
# crashes); pydantic still enforces every bound when the answer is read.
_DROPPED_SCHEMA_KEYS = frozenset({"default", "maxLength", "minLength", "maxItems", "minItems"})


def strict_json_schema(answer: type[BaseModel]) -> dict[str, Any]:
    """The answer model's JSON schema in the form strict structured-output servers require.

    Every object lists all its properties as required and allows no others; defaults and length
    bounds are dropped (see _DROPPED_SCHEMA_KEYS). Field descriptions stay: they tell the model
    what each field means.
    """
    root = answer.model_json_schema()
    definitions: dict[str, Any] = root.get("$defs", {})

    def strict(node: object, inlining: frozenset[str] = frozenset()) -> object:
        if isinstance(node, list):
            return [strict(item, inlining) for item in node]
        if not isinstance(node, dict):
            return node
        name = str(node.get("$ref", "")).rsplit("/", 1)[-1]
        if "$ref" in node and len(node) > 1 and name in definitions and name not in inlining:
            # A reference with sibling keywords (a field description) is not accepted by every strict server.
            merged = {**definitions[name], **{k: v for k, v in node.items() if k != "$ref"}}
            return strict(merged, inlining | {name})
        result: dict[str, object] = {}
        for key, value in node.items():
            if key in _DROPPED_SCHEMA_KEYS:
                continue
            if key in ("properties", "$defs") and isinstance(value, dict):
                result[key] = {field_name: strict(schema, inlining) for field_name, schema in value.items()}
            else:
                result[key] = strict(value, inlining)
        if result.get("type") == "object" and isinstance(result.get("properties"), dict):
            properties: dict[str, object] = result["properties"]  # type: ignore[assignment]
            result["required"] = list(properties)
            result["additionalProperties"] = False
        return result

    schema = strict(root)
    assert isinstance(schema, dict)
    return schema


def schema_instruction(schema: dict[str, Any]) -> str:
    return (
        "Answer with a single JSON object and nothing else (no code fence, no text before or after it). "
        "It must match this JSON schema:\n" + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    )
