"""The scripted double's answers to the peers' own calls (mem0's extraction, graphiti's prompts): a TEST DOUBLE.

The peers label each call with a purpose (``bench/stale/peers/counting.py`` sends it in the purpose header), so the
double tells their calls from the memory's. What it answers follows the same oracle / control idea as
``bench/stale/scripted.py``:

- **mem0** asks for ``{"memory": [{"id": ..., "text": ...}]}`` (its ADD-only extraction, ``json_object``, no schema
  sent). The oracle extracts the M_old statement, verbatim, from the session that holds it, and M_new likewise; the
  control only M_old; anything else extracts nothing (``{"memory": []}``).
- **graphiti** sends each call's JSON schema, in ``response_format`` (json_schema) or appended to its prompt after
  "Respond with a JSON object in the following format:" (json_object). The double answers every graphiti call with
  the **minimal instance of that schema** (required fields only; empty lists, empty strings, zeros, false, null
  where allowed, the first enum value), which graphiti must accept: no entity, no duplicate, no contradiction, no
  attribute. Two calls carry the scenario instead, so that what the user said reaches graphiti's search: entity
  extraction names the user and what the statement is about, and edge extraction returns the statement, verbatim,
  as a fact between them (the oracle for M_old and M_new, the control for M_old only).

A schema the double cannot read (no schema in the request) gets a 500 naming the purpose, like any unmatched call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from bench.stale.dataset import Scenario
from bench.stale.scripted import Behaviour, fact_text, key, shows
from lastknown_graph.testing.scripted_server import RecordedRequest, Reply, Rule

MEM0_EXTRACTION: Final = "mem0:extract"  # bench.stale.peers.mem0_system.EXTRACTION_PURPOSE, without importing mem0
GRAPHITI_PREFIX: Final = "graphiti:"
GRAPHITI_ENTITIES: Final = "graphiti:extract_nodes.extract_message"
GRAPHITI_EDGES: Final = "graphiti:extract_edges.edge"
SCHEMA_IN_PROMPT: Final = "Respond with a JSON object in the following format:"
USER_ENTITY: Final = "User"
# Where each peer's prompt shows the conversation being processed (not the earlier ones it shows for context).
EPISODE_SECTIONS: Final = (
    ("<CURRENT MESSAGE>", "</CURRENT MESSAGE>"),  # graphiti's entity extraction
    ("<CURRENT_MESSAGE>", "</CURRENT_MESSAGE>"),  # graphiti's edge extraction
    ("## New Messages", "## Observation Date"),  # mem0's extraction
)
SUBJECT_WORDS: Final = 4  # the statement's first words name what it is about; enough to tell two statements apart


class SchemaError(ValueError):
    """The request carries no JSON schema the double can read."""


def request_schema(request: RecordedRequest) -> dict[str, Any]:
    """The JSON schema a graphiti call asks for: its json_schema response format, or the one in its prompt."""
    response_format = request.body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        schema = (response_format.get("json_schema") or {}).get("schema")
        if isinstance(schema, dict):
            return schema
    prompt = request.last_user_message
    at = prompt.rfind(SCHEMA_IN_PROMPT)
    if at >= 0:
        try:
            schema, _ = json.JSONDecoder().raw_decode(prompt[at + len(SCHEMA_IN_PROMPT):].lstrip())
        except json.JSONDecodeError as exc:
            raise SchemaError(f"unreadable schema after {SCHEMA_IN_PROMPT!r}: {exc}") from exc
        if isinstance(schema, dict):
            return schema
    raise SchemaError(f"no JSON schema in the request (purpose {request.purpose!r})")


def minimal_instance(schema: Mapping[str, Any], definitions: Mapping[str, Any] | None = None) -> Any:
    """The smallest value valid under a pydantic-style JSON schema: required properties only, empty arrays (or
    ``minItems`` minimal items), "" / 0 / false, null where the schema allows it, the first enum value."""
    definitions = definitions if definitions is not None else schema.get("$defs", {})
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return minimal_instance(definitions[name], definitions)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for combinator in ("anyOf", "oneOf"):
        if combinator in schema:
            options = schema[combinator]
            if any(option.get("type") == "null" for option in options):
                return None
            return minimal_instance(options[0], definitions)
    if "allOf" in schema:
        return minimal_instance(schema["allOf"][0], definitions)
    kind = schema.get("type")
    if isinstance(kind, list):
        if "null" in kind:
            return None
        kind = kind[0]
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties", {})
        return {name: minimal_instance(properties.get(name, {}), definitions) for name in schema.get("required", [])}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        return [minimal_instance(schema.get("items", {}), definitions) for _ in range(count)]
    if kind == "string":
        return "" if "minLength" not in schema else "x" * int(schema["minLength"])
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    return None


def minimal_reply(request: RecordedRequest) -> Reply:
    try:
        return Reply.json(minimal_instance(request_schema(request)))
    except SchemaError as exc:
        return Reply.failure(500, f"scripted double: {exc}")


def subject(statement: str) -> str:
    """What a statement is about, as graphiti's second entity: its first words."""
    return " ".join(key(statement).split()[:SUBJECT_WORDS]).strip(" ,.;:!?")


def _episode_shows(statement: str) -> Callable[[RecordedRequest], bool]:
    """The episode being processed (graphiti's CURRENT_MESSAGE, mem0's New Messages) holds the statement."""
    def holds(request: RecordedRequest) -> bool:
        prompt = request.last_user_message
        for opening, closing in EPISODE_SECTIONS:
            start = prompt.find(opening)
            if start >= 0:
                end = prompt.find(closing, start)
                return shows(prompt[start:end if end >= 0 else len(prompt)], statement)
        return False
    return holds


def _statement_rules(statement: str) -> list[Rule]:
    entities = {"extracted_entities": [{"name": USER_ENTITY, "entity_type_id": 0},
                                       {"name": subject(statement), "entity_type_id": 0}]}
    edge = {"source_entity_name": USER_ENTITY, "target_entity_name": subject(statement),
            "relation_type": "SAID", "fact": fact_text(statement), "valid_at": None, "invalid_at": None}
    return [
        Rule(purpose=MEM0_EXTRACTION, when=_episode_shows(statement),
             reply=Reply.json({"memory": [{"id": "0", "text": fact_text(statement)}]})),
        Rule(purpose=GRAPHITI_ENTITIES, when=_episode_shows(statement), reply=Reply.json(entities)),
        Rule(purpose=GRAPHITI_EDGES, when=_episode_shows(statement), reply=Reply.json({"edges": [edge]})),
    ]


def peer_rules(scenarios: Iterable[Scenario], behaviour: Behaviour) -> list[Rule]:
    """Per-scenario rules for the peers' calls, then their defaults (nothing extracted, minimal instances)."""
    rules: list[Rule] = []
    for scenario in scenarios:
        rules += _statement_rules(scenario.M_old)
        if behaviour == "oracle":
            rules += _statement_rules(scenario.M_new)
    rules += [
        Rule(purpose=MEM0_EXTRACTION, reply=Reply.json({"memory": []})),
        Rule(when=lambda r: (r.purpose or "").startswith(GRAPHITI_PREFIX), reply=minimal_reply),
    ]
    return rules
