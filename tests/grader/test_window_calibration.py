"""A window's calibrated cost: a point measured while something else held the device is
told apart from the others and measured again (grader/session.py)."""

from __future__ import annotations

from grader.session import disagreeing


def test_a_point_far_from_the_others_is_measured_again() -> None:
    # An H100's four points in one runner (µs), then one grading's whose longest copy was
    # calibrated while the device was held otherwise.
    steady = [(2.9e-6, 286.0e-6), (6.1e-6, 287.5e-6), (12.0e-6, 290.0e-6), (23.0e-6, 289.9e-6)]
    assert disagreeing(steady) == []
    spoilt = [*steady[:3], (23.0e-6, 230.6e-6)]
    assert disagreeing(spoilt) == [3]
    assert disagreeing([(2.9e-6, 301.0e-6), *steady[1:]]) == [0]
