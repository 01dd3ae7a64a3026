"""The Cypher library's files: named, documented, parameterised, and the only Cypher the code runs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lastknown_graph.store.neo4j.cypher_library import CypherLibrary

ROOT = Path(__file__).resolve().parents[2]


def test_every_query_file_has_a_header_naming_it() -> None:
    library = CypherLibrary()
    names = library.names()
    assert "schema" in names and "timeline" in names
    for name in names:
        text = library.get(name).text
        assert text.startswith(f"// name: {name}\n"), name
        for field in ("purpose", "parameters", "example"):
            assert re.search(rf"^// {field}:", text, re.MULTILINE), f"{name} lacks '{field}'"
        assert library.get(name).purpose


def test_every_query_the_code_names_exists() -> None:
    library = CypherLibrary()
    used = set()
    for path in (ROOT / "lastknown_graph").rglob("*.py"):
        used |= set(re.findall(r'_run\(\s*tx,\s*"([a-z_]+)"', path.read_text()))
        used |= set(re.findall(r'_query\(\s*"([a-z_]+)"', path.read_text()))
        used |= set(re.findall(r'library\.get\("([a-z_]+)"\)', path.read_text()))
    assert used, "no query names found: the scan is broken"
    assert used <= set(library.names())


def test_schema_file_splits_into_statements() -> None:
    statements = CypherLibrary().get("schema").statements()
    assert statements[0].startswith("CREATE CONSTRAINT user_id_unique")
    assert any("VECTOR INDEX fact_embedding" in s and "$embedding_dimension" in s for s in statements)
    assert statements[-1].startswith("CALL db.awaitIndexes")
    assert not any(s.startswith("//") for s in statements)


def test_the_library_is_in_three_parts_and_a_name_is_unique_across_them() -> None:
    library = CypherLibrary()
    parts = {part: library.names(part) for part in ("audit", "store", "bench")}
    assert all(name.startswith("audit_") for name in parts["audit"]) and len(parts["audit"]) > 10
    assert all(name.startswith("bench_") for name in parts["bench"]) and parts["bench"]
    assert not any(name.startswith(("audit_", "bench_")) for name in parts["store"])
    every = [name for names in parts.values() for name in names]
    assert len(every) == len(set(every)) == len(library.names())
    assert [p.parent.name for p in (ROOT / "cypher").rglob("*.cypher")].count("cypher") == 0  # none left at the top
    assert library.get("timeline").name == "timeline" and library.get("audit_why_retired").purpose


def test_an_unknown_part_is_refused() -> None:
    with pytest.raises(ValueError, match="no part 'writes'"):
        CypherLibrary().names("writes")
