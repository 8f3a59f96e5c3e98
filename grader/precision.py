"""How finely a grading times each benchmark case: the stopping rule's sample counts, its
standard error target and the case's time budget, standard or thorough (a batch's
`thorough` tier). Only how long timing goes on changes; every check stays as it is."""

from __future__ import annotations

import math
from enum import StrEnum

# A median and a spread a ranking can stand on; sampling goes on to the standard error target.
MIN_SAMPLES = 30
MAX_SAMPLES = 1000
# Leaderboard mode makes and checks fresh inputs for every sample; past this many its median
# is known well enough even where the spread keeps the standard error above its target.
RANKED_MAX_SAMPLES = 100
TARGET_REL_SEM = 0.005
# Halving a mean's standard error takes four times the samples, and about four times the time.
THOROUGH_FACTOR = 4


class Precision(StrEnum):
    """STANDARD: the figures above. THOROUGH: THOROUGH_FACTOR times the samples (at least,
    at most, and in leaderboard mode), the standard error target over its square root (the
    error of a mean of four times the samples is half), and THOROUGH_FACTOR times the time
    budget of a case, which those samples need. A grading's time limit grows by what the
    longer budgets take (`extra_time_s`)."""

    STANDARD = "standard"
    THOROUGH = "thorough"

    @property
    def factor(self) -> int:
        return THOROUGH_FACTOR if self is Precision.THOROUGH else 1

    def scaled(self, count: int) -> int:
        """A count of timed calls or samples, at this precision."""
        return count * self.factor

    @property
    def min_samples(self) -> int:
        return self.scaled(MIN_SAMPLES)

    @property
    def max_samples(self) -> int:
        return self.scaled(MAX_SAMPLES)

    @property
    def ranked_max_samples(self) -> int:
        return self.scaled(RANKED_MAX_SAMPLES)

    @property
    def target_rel_sem(self) -> float:
        return TARGET_REL_SEM / math.sqrt(self.factor)

    def budget_s(self, case_budget_s: float) -> float:
        """A case's timing budget, from the problem's `case_time_budget_s`."""
        return case_budget_s * self.factor

    def extra_time_s(self, case_budget_s: float, cases: int) -> float:
        """What a grading's time limit grows by: the longer budgets of `cases` cases, each
        spent twice at most (the runner's samples, then the harness's own clock)."""
        return 2 * (self.budget_s(case_budget_s) - case_budget_s) * cases
