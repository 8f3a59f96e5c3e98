"""Queries for problems."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Problem


def get_problem(session: Session, name: str) -> Problem | None:
    return session.scalar(select(Problem).where(Problem.name == name))


def list_problems(session: Session, *, include_hidden: bool) -> Sequence[Problem]:
    query = select(Problem).order_by(Problem.name)
    if not include_hidden:
        query = query.where(Problem.is_public.is_(True))
    return session.scalars(query).all()
