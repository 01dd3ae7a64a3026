"""The memory as an MCP server (official ``mcp`` SDK): tools, resources, and how a failure reaches the client.

Each tool is a thin function whose signature is its input schema and whose return type is its output schema; the
work is ``MemoryService``'s. A typed error of the library becomes an MCP tool error carrying its class and message
(``InvalidInputError: date 2099-01-01 is in the future``), never a traceback; an unexpected one reaches the client
only as "Error executing tool ...", its traceback staying in the server's log (stderr: stdout is the protocol).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from lastknown_graph.domain.reports import JobStatus
from lastknown_graph.errors import LastknownError
from lastknown_graph.mcp.schemas import (
    AsOfResult,
    Confirm,
    ContextResult,
    CorrectionAction,
    CorrectionResult,
    Day,
    DomainFilter,
    DreamPlanResult,
    FindResult,
    ForgetResult,
    KindFilter,
    KnownAt,
    Messages,
    PastDay,
    PeriodFilter,
    PremiseNotesResult,
    RememberResult,
    ReviewDecisionResult,
    ReviewResult,
    SearchFilters,
    SessionArgument,
    StatusFilter,
    TimelineResult,
    TopicFilter,
    UserArgument,
)
from lastknown_graph.mcp.service import MemoryService
from lastknown_graph.pipeline.context import MIN_CONTEXT_TOKENS
from lastknown_graph.reader import DEFAULT_FORGET_THRESHOLD, FIND_MAX_K

SERVER_NAME = "lastknown"
INSTRUCTIONS = """\
Long-term memory about the user that notices when what it remembers stops being true.
Before answering: put `context` into the system prompt, and call `premise_notes` with the user's message (it says
when the message assumes something that is no longer true). After a conversation: `remember` it, with
background: true so the answer does not wait. When the user says a remembered fact is wrong ("I never lived in
Austin"): `correct` it, with their words as the statement. `forget` / `forget_about` delete for good and need
confirm: true. `review` lists retirements decided with little margin: show them to the user, and record their
answer with `review_decide`."""

READS = ToolAnnotations(read_only_hint=True, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
# A decision is recorded once: the same call again is refused (ReviewDecidedError), so it is not idempotent.
DECIDES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
DELETES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)

ResultT = TypeVar("ResultT")


def build_server(service: MemoryService) -> MCPServer:
    """An MCP server over ``service``; run it with ``.run("stdio")`` or ``.run("streamable-http", host=, port=)``."""
    server: MCPServer = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS)

    def answer(call: Callable[[], ResultT]) -> ResultT:
        try:
            return call()
        except (LastknownError, ValueError) as exc:  # ValueError: the stores' own id checks, as in the CLI
            raise ToolError(service.error_text(exc)) from exc

    # A server pinned to a user lets calls leave `user` out; one that is not makes it a required argument:
    # pydantic reads a default of `...` as "required", and the SDK builds each tool's schema with pydantic.
    user_default: Any = None if service.users.pinned is not None else ...

    def remember(
        messages: Messages, date: Day, session: SessionArgument,
        background: Annotated[bool, Field(description="Return at once with a job_id and write meanwhile "
                                                      "(remember_status tells when it is done).")] = False,
        user: UserArgument = user_default,
    ) -> RememberResult:
        """Remember one conversation: keep the user's words and update what is known about them, retiring what
        the conversation shows is no longer true. All or nothing; writing the same session again changes nothing."""
        return answer(lambda: service.remember(user, messages, date, session, background))

    def remember_status(
        job_id: Annotated[str, Field(description="The job_id remember returned.")], user: UserArgument = user_default,
    ) -> JobStatus:
        """The state of a background remember: queued, running, done (with its report), failed (with the error;
        then nothing of it was stored) or dropped (a deletion of the user's memory came first)."""
        return answer(lambda: service.remember_status(user, job_id))

    def context(
        max_tokens: Annotated[int | None, Field(ge=MIN_CONTEXT_TOKENS, description="Trim a long memory to about "
                                                "this many tokens (lasting and recent facts first).")] = None,
        known_at: KnownAt = None,
        user: UserArgument = user_default,
    ) -> ContextResult:
        """Everything true about the user now, then what is no longer true (since when, replaced by what): put it
        in the system prompt before answering."""
        return answer(lambda: service.context(user, max_tokens, known_at))

    def premise_notes(
        message: Annotated[str, Field(description="The user's message, before answering it.")],
        user: UserArgument = user_default,
    ) -> PremiseNotesResult:
        """Does the message assume something that is no longer true ("rainy-day ideas for Portland?" after a move)?
        One note per outdated fact it assumes, to put before the answer."""
        return answer(lambda: service.premise_notes(user, message))

    def find(
        query: Annotated[str, Field(description="What to look for, in words.")],
        k: Annotated[int, Field(ge=1, le=FIND_MAX_K, description="How many facts.")] = 5,
        status: StatusFilter = None, kind: KindFilter = None, domain: DomainFilter = None, topic: TopicFilter = None,
        valid_between: PeriodFilter = None,
        user: UserArgument = user_default,
    ) -> FindResult:
        """Search current and historical facts by meaning, with their ids (for correct and forget). Filters narrow
        the search itself: k facts come back whenever k facts match."""
        return answer(lambda: service.find(user, query, k, SearchFilters(
            status=status, kind=kind, domain=domain, topic=topic, valid_between=valid_between)))

    def timeline(user: UserArgument = user_default) -> TimelineResult:
        """What happened to the user's facts, in date order: added, confirmed, retired (by what, why), expired."""
        return answer(lambda: service.timeline(user))

    def as_of(date: PastDay, known_at: KnownAt = None, user: UserArgument = user_default) -> AsOfResult:
        """What was true about the user on a past date (with known_at: as the memory held it at that moment)."""
        return answer(lambda: service.as_of(user, date, known_at))

    def correct(
        statement: Annotated[str, Field(description="The user's own words saying why the fact is wrong, e.g. "
                                                    "\"That's wrong, I never lived in Austin\"; recorded as the "
                                                    "reason.")],
        fact_id: Annotated[str | None, Field(description="The fact's id (from find, timeline or a report).")] = None,
        matching: Annotated[str | None, Field(description="Or a piece of the fact's text, e.g. \"Austin\"; must "
                                                          "match exactly one fact.")] = None,
        action: Annotated[CorrectionAction, Field(description="retire (default): it is no longer held, kept in "
                          "the history as retired with the statement as the reason; forget: delete it everywhere "
                          "as if never said (needs confirm; the statement is then not stored either).")]
        = CorrectionAction.RETIRE,
        confirm: Confirm = False,
        user: UserArgument = user_default,
    ) -> CorrectionResult:
        """Correct a fact the user says is wrong: retire it with their words as the reason, or forget it."""
        return answer(lambda: service.correct(user, statement, fact_id, matching, action, confirm))

    def review(
        band: Annotated[float | None, Field(ge=0, le=1, description="How close to its bar stage 1's P(still true) "
                                                                    "counts as doubtful (default 0.1).")] = None,
        user: UserArgument = user_default,
    ) -> ReviewResult:
        """Retirements the checks decided with little margin, for the user to confirm or undo: both facts, the
        reason, why it is doubtful and the user's words behind it. Show them to the user; do not decide for them."""
        return answer(lambda: service.review(user, band))

    def dream_plan(user: UserArgument = user_default) -> DreamPlanResult:
        """What consolidating the user's memory would change, changing nothing: the same value said several ways
        merged into one of its texts, two current values of a one-valued attribute resolved to the later one, old
        topics given their attribute, past moments expired; each proposal with the validator's decision and reason."""
        return answer(lambda: service.dream_plan(user))

    def dream(user: UserArgument = user_default) -> DreamPlanResult:
        """Consolidate the user's memory as one session that undo reverts exactly: the proposals dream_plan lists,
        each the validator did not reject applied (one needing the user's word also waits in review). A dream
        writes no words and deletes nothing."""
        return answer(lambda: service.dream(user))

    def review_decide(
        retirement_id: Annotated[str, Field(description="The retired fact's id (retirement_id from review).")],
        keep_old: Annotated[bool, Field(description="true: the user says the old fact still holds (it is current "
                                                    "again, and never retired by the same fact again); false: the "
                                                    "retirement was right.")],
        new_fact_id: Annotated[str | None, Field(description="The fact that retired it, to name the pair.")] = None,
        user: UserArgument = user_default,
    ) -> ReviewDecisionResult:
        """Record the user's decision on a retirement from review."""
        return answer(lambda: service.review_decide(user, retirement_id, new_fact_id, keep_old))

    def forget(
        fact_ids: Annotated[list[str], Field(min_length=1, description="Ids of the facts to delete.")],
        confirm: Confirm = False, user: UserArgument = user_default,
    ) -> ForgetResult:
        """Delete facts by id, with the text of the messages they came from: gone from the state, the history and
        every export. Needs confirm: true."""
        return answer(lambda: service.forget(user, fact_ids, confirm))

    def forget_about(
        query: Annotated[str, Field(description="What to forget, in words, e.g. \"my ex\".")],
        threshold: Annotated[float, Field(gt=0, le=1, description="How similar a fact must be to be deleted.")]
        = DEFAULT_FORGET_THRESHOLD,
        confirm: Confirm = False, user: UserArgument = user_default,
    ) -> ForgetResult:
        """Delete every fact (current or historical) similar to the query, with its source text. Needs confirm:
        true; without it the error lists what would be deleted."""
        return answer(lambda: service.forget_about(user, query, threshold, confirm))

    for tool, hints in ((remember, WRITES), (remember_status, READS), (context, READS), (premise_notes, READS),
                        (find, READS), (timeline, READS), (as_of, READS), (correct, WRITES), (review, READS),
                        (review_decide, DECIDES), (dream_plan, READS), (dream, WRITES), (forget, DELETES),
                        (forget_about, DELETES)):
        server.add_tool(tool, annotations=hints)
    _add_resources(server, service)
    return server


def _add_resources(server: MCPServer, service: MemoryService) -> None:
    def read(call: Callable[[], str]) -> str:
        try:
            return call()
        except (LastknownError, ValueError) as exc:
            raise ResourceError(service.error_text(exc)) from exc

    @server.resource("memory://{user}/state", name="state", mime_type="text/plain",
                     description="What is true about the user now and what no longer is (the context text).")
    def state(user: str) -> str:
        return read(lambda: service.context(user, None).context)

    @server.resource("memory://{user}/timeline", name="timeline", mime_type="application/json",
                     description="The user's timeline: adds, confirmations, retirements with cause, expiries.")
    def timeline(user: str) -> str:
        return read(lambda: json.dumps(service.timeline(user).model_dump(mode="json")["events"], ensure_ascii=False))

