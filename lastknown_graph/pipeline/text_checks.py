"""Normalisation used to tell a repeated fact from a new one."""

from __future__ import annotations

import re


def normalised(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()
