"""The submission lists' filter form (problem, user, status, mode), read from the query
string as a SubmissionFilter; a blank field narrows nothing."""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated

from fastapi import Depends, Query

from server.submissions.service import SubmissionFilter


def own_filter(
    problem: str | None = Query(default=None, max_length=100),
    status: str | None = Query(default=None, max_length=16),
    mode: str | None = Query(default=None, max_length=16),
) -> SubmissionFilter:
    """A list of the viewer's own submissions: by problem, status and mode."""
    return SubmissionFilter.of(problem, status=status, mode=mode)


def everyones_filter(
    narrowed: Annotated[SubmissionFilter, Depends(own_filter)],
    user: str | None = Query(default=None, max_length=64),
) -> SubmissionFilter:
    """The organizers' list of everyone's submissions: by user as well."""
    return replace(narrowed, user=SubmissionFilter.of(user=user).user)


OwnFilter = Annotated[SubmissionFilter, Depends(own_filter)]
EveryonesFilter = Annotated[SubmissionFilter, Depends(everyones_filter)]
