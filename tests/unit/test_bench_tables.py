"""The markdown tables of the bench reports: one row per line, whatever a cell holds."""

from bench._report import markdown_table


def test_a_multi_line_error_message_stays_in_its_row() -> None:
    error = "ValidationError: 1 validation error for ExtractedEdges\nedges\n  Field required | see docs"
    lines = markdown_table(["system", "error"], [["peer", error], ["memory", ""]])
    assert len(lines) == 4
    assert lines[2] == (
        "| peer | ValidationError: 1 validation error for ExtractedEdges edges Field required / see docs |")
    assert lines[3] == "| memory |  |"
