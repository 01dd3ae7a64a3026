"""The Cypher library: every query the code runs is a named, parameterised file in ``cypher/``, in one of three
parts: ``audit/`` for users (``lastknown audit``, Neo4j Browser), ``store/`` for the store's own reads and writes,
``bench/`` for the benchmarks. A name is unique across the parts.

Files are read once per :class:`CypherLibrary` instance and never formatted: values only
ever reach Neo4j as parameters. Users run the same files in Neo4j Browser or cypher-shell.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# Statement ends are semicolons at the end of a line; Cypher string literals in our files never span lines.
_STATEMENT_END = re.compile(r";[ \t]*(?:\n|$)")


def default_cypher_dir() -> Path:
    """``cypher/`` inside the installed package, or beside it in a source checkout."""
    packaged = Path(str(resources.files("lastknown_graph"))) / "cypher"
    if packaged.is_dir():
        return packaged
    source_checkout = Path(__file__).resolve().parents[3] / "cypher"
    if source_checkout.is_dir():
        return source_checkout
    raise FileNotFoundError("the cypher/ query library is missing from this installation of lastknown_graph")


@dataclass(frozen=True)
class Query:
    name: str
    text: str
    purpose: str

    def statements(self) -> list[str]:
        """The file's statements, for files holding several (``schema.cypher``)."""
        body = "\n".join(line for line in self.text.splitlines() if not line.lstrip().startswith("//"))
        return [part.strip() for part in _STATEMENT_END.split(body) if part.strip()]


PARTS = ("audit", "store", "bench")


@dataclass
class CypherLibrary:
    directory: Path = field(default_factory=default_cypher_dir)
    _cache: dict[str, Query] = field(default_factory=dict, init=False, repr=False)

    def names(self, part: str | None = None) -> list[str]:
        """Every query's name, or those of one part (``audit``, ``store``, ``bench``)."""
        if part is not None and part not in PARTS:
            raise ValueError(f"no part {part!r} in the Cypher library; parts: {', '.join(PARTS)}")
        return sorted(p.stem for chosen in ([part] if part else PARTS)
                      for p in (self.directory / chosen).glob("*.cypher"))

    def get(self, name: str) -> Query:
        if name in self._cache:
            return self._cache[name]
        if not _NAME.match(name):
            raise KeyError(f"not a query name: {name!r}")
        found = [path for part in PARTS if (path := self.directory / part / f"{name}.cypher").is_file()]
        if not found:
            raise KeyError(f"no query named {name!r} in {self.directory}")
        if len(found) > 1:
            raise KeyError(f"{name!r} is in more than one part of {self.directory}: {', '.join(map(str, found))}")
        [path] = found  # a name is unique across the parts (tests/contract/test_cypher_library.py)
        text = path.read_text(encoding="utf-8")
        query = Query(name=name, text=text, purpose=_header_field(text, "purpose"))
        self._cache[name] = query
        return query


def _header_field(text: str, field_name: str) -> str:
    lines = text.splitlines()
    collected: list[str] = []
    for index, line in enumerate(lines):
        if line.startswith(f"// {field_name}:"):
            collected.append(line.split(":", 1)[1].strip())
            for follow in lines[index + 1 :]:
                # Continuation lines are indented comments; the next "// key:" ends the field.
                if follow.startswith("//  ") and not re.match(r"^//\s*\w+:", follow):
                    collected.append(follow[2:].strip())
                else:
                    break
            break
    return " ".join(collected)
