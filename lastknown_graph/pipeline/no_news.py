"""The model's own P(still true) when the newer note says nothing: the level a newer fact must bring stage 1 below.

Stage 1's bars (``volatility.stage1_flag_bar``, 0.60 to 0.95) assume a model that says "still true" with
confidence when the newer note is unrelated. A small model does not: Qwen2.5-Coder-1.5B read P(still true) between
0.36 and 0.66 for every pair of a user who knows 100 facts, about 0.53 with a content-free newer note, so every
pair fell below every bar, went to stage 2 and was often retired there (33 of 57 unchanged pairs,
bench/results/no-news-bar.md). Measured once per ``Memory`` on fixed content-free pairs, this level caps the bars
(``ConflictSettings.stage1_bar_cap="no_news"``): a pair goes to stage 2 only when its newer fact makes the earlier
one look less likely to hold than no news at all does. The idea is contextual calibration ("Calibrate Before
Use", Zhao et al. 2021) applied to the bar rather than to each answer: per pair it ranked worse (AUC 0.71 against
0.75 for the raw P on 105 real pairs), averaged over the model it is a stable level.
"""

from __future__ import annotations

from statistics import fmean

from lastknown_graph.llm import ChatModel, UsageMeter
from lastknown_graph.llm.errors import LLMError
from lastknown_graph.prompts.still_true import (
    NO_NEWS_EARLIER_DAY,
    NO_NEWS_LATER_DAY,
    NO_NEWS_NOTES,
    NO_NEWS_OLDER_NOTES,
    outdated_messages,
)

PURPOSE = "calibration"


class NoLogprobsError(LLMError):
    """The level needs P(Yes) from log-probabilities, and this server gives none."""


def no_news_level(llm: ChatModel, meter: UsageMeter | None = None) -> float:
    """Mean P(still true) over the fixed content-free pairs: ``len(NO_NEWS_OLDER_NOTES) * len(NO_NEWS_NOTES)``
    one-token calls, counted under the purpose "calibration"."""
    if not llm.capabilities().logprobs:
        raise NoLogprobsError("the no-news level of stage 1 needs a server that returns log-probabilities")
    return fmean(
        1.0 - llm.yes_probability(outdated_messages(older, NO_NEWS_EARLIER_DAY, note, NO_NEWS_LATER_DAY),
                                  purpose=PURPOSE, meter=meter)
        for older in NO_NEWS_OLDER_NOTES for note in NO_NEWS_NOTES
    )
