# threat: 17
# expect: error
# defence: the runner catches BaseException and the harness treats any missing answer as an error
"""Raises a BaseException subclass of its own, which no `except Exception` catches."""


class Escape(BaseException):
    pass


def custom_kernel(data):
    raise Escape("passed")
