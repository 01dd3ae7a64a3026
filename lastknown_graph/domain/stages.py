"""Which step of the conflict check decided about a pair of facts; stored on retirements, shown in reports."""

from enum import StrEnum


class Stage(StrEnum):
    # How a write decides since attributes (pipeline/judgment.py):
    REPLACED = "replaced"  # a stated new value of a one-valued attribute replaced the current one: no model asked
    JUDGED = "judged"  # the model said an implied or vaguer value of a one-valued attribute is a different value
    DEPENDENT = "dependent"  # the model said a change of the attribute it depends on (or of its family) ended it
    ENDED = "ended"  # the user said something is over, and the model named which fact of that attribute it ends
    # Written by versions before attributes (pairwise checks), and still read:
    STAGE1 = "stage1"  # the one-token check: the earlier fact is still true, nothing more asked
    STAGE2 = "stage2"  # the reasoning check decided
    SCREEN = "screen"  # the write's one screening call did not list the pair: the earlier fact is still true
    SCREEN_STAGE2 = "screen_stage2"  # the screening call listed the pair and the reasoning check decided
    # a confident stage 1 decided because stage 2's "still true" only restated the question (no reason about the pair)
    STAGE1_CONFIDENT = "stage1_confident"
    EVIDENCE = "evidence"  # enough inferred contradictions retired a well-confirmed fact
    RESISTED = "resisted"  # a well-confirmed fact held against one inferred contradiction
    CORRECTION = "correction"  # the user said the fact is wrong or outdated: no model was asked
    # A dream (pipeline/dream.py), by rule on what the memory holds:
    DREAM_RESOLVED = "dream_resolved"  # two current values of a one-valued attribute: the one stated later stays
    DREAM_REVIEW = "dream_review"  # the same, applied but waiting for the user: its validator said so
    DREAM_MERGED = "dream_merged"  # a fact saying what a stored one says, merged into it (an expiry, not an end)
    # the user rejected this pair's retirement on review (Memory.review_decide): kept, and no model was asked
    REVIEWED = "reviewed"
