"""docker-compose.yml: parsed and checked, since no Docker engine runs where the tests do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

COMPOSE = Path(__file__).resolve().parents[2] / "docker-compose.yml"


def load() -> dict[str, Any]:
    document = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(document, dict)
    return document


def test_official_neo4j_526_community_image_with_browser_and_bolt() -> None:
    service = load()["services"]["neo4j"]
    assert service["image"] == "neo4j:5.26-community"
    ports = {p.rsplit(":", 1)[-1]: p for p in service["ports"]}
    assert set(ports) == {"7474", "7687"}
    assert all(p.startswith("127.0.0.1:") for p in service["ports"]), "ports must not be open to the network"


def test_password_comes_from_the_environment_and_data_from_a_named_volume() -> None:
    document = load()
    service = document["services"]["neo4j"]
    auth = service["environment"]["NEO4J_AUTH"]
    assert auth.startswith("neo4j/${NEO4J_PASSWORD")
    data_volume = next(v.split(":")[0] for v in service["volumes"] if v.endswith(":/data"))
    assert data_volume in document["volumes"]
