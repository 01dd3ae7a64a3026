"""No Cypher is ever built from strings: values go in as parameters, queries come from cypher/ files.

The scan parses every Python file of the library, the benchmarks and the tests. It fails on:
- a Cypher-looking string built with an f-string, ``+``, ``%`` or ``.format`` anywhere;
- a Cypher literal in the library or the benchmarks at all (their queries live in ``cypher/``);
- a driver call (``run``, ``execute_query``) whose query is not a plain name or a library lookup.
A positive control feeds the scanner the patterns it must catch, so a broken scan cannot pass.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CYPHER = re.compile(r"\b(MATCH|MERGE|CREATE|DETACH\s+DELETE|RETURN|UNWIND|SET)\b\s*[\(\w$]", re.IGNORECASE)
CYPHER_STRONG = re.compile(r"\b(MATCH|MERGE|OPTIONAL MATCH|DETACH DELETE|UNWIND)\s*\(|\bRETURN\b.*\bAS\b")
DRIVER_CALLS = {"run", "execute_query"}


def _string_parts(node: ast.AST) -> str:
    return " ".join(n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _is_built_string(node: ast.AST) -> bool:
    if isinstance(node, ast.JoinedStr):
        return any(isinstance(v, ast.FormattedValue) for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
            and isinstance(node.func.value, ast.Constant))


def _query_argument_is_safe(node: ast.AST) -> bool:
    """A name, an attribute (``query.text``), a library lookup, or a constant string literal."""
    if isinstance(node, (ast.Name, ast.Attribute)):
        return True
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return True
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"


def _is_process_call(node: ast.Call) -> bool:
    """``subprocess.run([...])`` and friends: a command line, not a query; ``asyncio.run(...)``: a coroutine."""
    receiver = node.func.value if isinstance(node.func, ast.Attribute) else None
    return (isinstance(receiver, ast.Name) and receiver.id in {"subprocess", "asyncio"}) or (
        bool(node.args) and isinstance(node.args[0], (ast.List, ast.Tuple, ast.ListComp)))


def problems(source: str, allow_literals: bool) -> list[str]:
    found: list[str] = []
    tree = ast.parse(source)
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    for node in ast.walk(tree):
        if _is_built_string(node) and CYPHER_STRONG.search(_string_parts(node)):
            found.append(f"line {node.lineno}: Cypher built from strings")
        if (not allow_literals and isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings
                and CYPHER_STRONG.search(node.value) and CYPHER.search(node.value)):
            found.append(f"line {node.lineno}: Cypher literal outside cypher/")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in DRIVER_CALLS \
                and node.args and not _is_process_call(node) and not _query_argument_is_safe(node.args[0]):
            found.append(f"line {node.lineno}: {node.func.attr}() with a computed query")
    return sorted(set(found))


def test_the_scanner_catches_each_pattern() -> None:
    bad = '''
label = "Fact"
user = "x"
q1 = f"MATCH (n:{label}) RETURN n.id AS id"
q2 = "MATCH (n {id: '" + user + "'}) RETURN n AS n"
q3 = "MATCH (n) WHERE n.id = '%s' RETURN n AS n" % user
q4 = "MATCH (n:{}) RETURN n AS n".format(label)
tx.run("MATCH (n) " + "RETURN n AS n")
session.execute_query(build_query(label))
'''
    assert {p.split(':')[0] for p in problems(bad, allow_literals=True)} == {f"line {n}" for n in range(4, 10)}
    assert problems('q = "MATCH (n) RETURN n.id AS id"', allow_literals=False)
    assert problems('tx.run(library.get("timeline").text, params)', allow_literals=False) == []
    assert problems('print(f"Set {count} facts; return to the menu")', allow_literals=False) == []


def test_no_python_file_builds_cypher_from_strings() -> None:
    checked = 0
    report: list[str] = []
    for folder, allow_literals in (("lastknown_graph", False), ("bench", False), ("tests", True)):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == Path(__file__).name:
                continue  # this file holds the bad patterns on purpose
            checked += 1
            report += [f"{path.relative_to(ROOT)} {p}" for p in problems(path.read_text("utf-8"), allow_literals)]
    assert checked > 40
    assert report == []


def test_every_cypher_file_takes_values_as_parameters() -> None:
    """No query file splices values in with APOC's dynamic Cypher or string concatenation."""
    files = sorted((ROOT / "cypher").rglob("*.cypher"))
    assert len(files) > 40
    for path in files:
        body = "\n".join(line for line in path.read_text("utf-8").splitlines() if not line.lstrip().startswith("//"))
        assert "apoc.cypher" not in body and "db.cypher" not in body, path.name
        assert not re.search(r"'\s*\+\s*\$|\$\w+\s*\+\s*'", body), f"{path.name} concatenates a parameter into text"
