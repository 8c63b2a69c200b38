"""A fixture: every Python definition the outline knows."""

import functools

MAX_SIZE = 10
default_name = "x"


def top(a: int, b: str = "s") -> int:
    """A function."""

    def inner(x):
        return x

    return inner(a)


@functools.lru_cache(maxsize=None)
@staticmethod
def decorated(x):
    return x


class Shape(object):
    """A class."""

    sides = 0

    def __init__(self, name):
        self.name = name

    @property
    def area(self) -> float:
        return 0.0

    class Inner:
        def deep(self):
            pass


async def fetch(url,
                timeout=3):
    return url
