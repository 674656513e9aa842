"""argparse types for the models' counts and distances: a negative layer count or distance would turn the
syntax off without a word (``range(-1)`` builds no layer), so it is refused where it enters."""
import argparse


def _int_at_least(low: int):
    def parse(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
        if n < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, got {n}")
        return n

    parse.__name__ = f"int>={low}"
    return parse


non_negative_int = _int_at_least(0)
positive_int = _int_at_least(1)
