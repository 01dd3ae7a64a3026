"""The labelled set of mature-user conversations (issue 33): each conversation is written into a fresh user who knows
a 100- or 1,000-fact history, and graded with no judge on what it must end, what must stay, and the background it
must not touch. ``python -m bench.judgment --help``; the modules: ``data`` (the labelled set), ``users`` (the user
each conversation meets), ``scripted`` (the label-answering double), ``run`` (one write, kept for resuming),
``grading`` and ``report``.
"""
