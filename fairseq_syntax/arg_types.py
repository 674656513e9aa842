"""argparse types for the models' counts and distances, and for names that become part of file names. A negative
layer count or distance would turn the syntax off without a word (``range(-1)`` builds no layer), and a split named
``../x`` would write outside its folder, so each is refused where it enters."""
import argparse
import re


def int_at_least(low: int):
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


non_negative_int = int_at_least(0)
positive_int = int_at_least(1)


def _name_in_file_names(what: str, like: str):
    """A value that becomes part of file names (``{split}.inst.jsonl``): no folder may hide in it."""
    def parse(value: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", value):
            raise argparse.ArgumentTypeError(f"a {what} is a name like {like} (letters, digits, '_', '-', '.'), "
                                             f"got {value!r}")
        return value

    parse.__name__ = f"{what} name"
    return parse


split_name = _name_in_file_names("split", "train, valid or test")
suffix_name = _name_in_file_names("suffix", "heads or randheads")
language_name = _name_in_file_names("language", "en or de")


def split_names(value: str) -> str:
    """Space-separated split names (``--splits "train valid test"``)."""
    names = value.split()
    if not names:
        raise argparse.ArgumentTypeError("no split given")
    for name in names:
        split_name(name)
    return value
