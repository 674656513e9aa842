"""argparse types for the models' counts and distances: a negative layer count or distance would turn the
syntax off without a word (``range(-1)`` builds no layer), so it is refused where it enters."""
import argparse
import re


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


def split_name(value: str) -> str:
    """A split's name becomes part of file names (``{split}.inst.jsonl``): no folder may hide in it."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", value):
        raise argparse.ArgumentTypeError(f"a split is a name like train, valid or test (letters, digits, '_', "
                                         f"'-', '.'), got {value!r}")
    return value


def split_names(value: str) -> str:
    """Space-separated split names (``--splits "train valid test"``)."""
    names = value.split()
    if not names:
        raise argparse.ArgumentTypeError("no split given")
    for name in names:
        split_name(name)
    return value
