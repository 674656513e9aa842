"""fairseq-syntax-options: the options the plugin adds to an architecture or a task, with their defaults.

    fairseq-syntax-options transformer_sgnet_small      # --sgnet-*, --encoder-sla, --sla-* ...
    fairseq-syntax-options roberta_sgnet_small
    fairseq-syntax-options syntax_sentence_ranking
    fairseq-syntax-options --list                        # every architecture and task of the plugin

fairseq's own ``--help`` never lists a model's options (they are added after the architecture is chosen), so
this prints them from the registered argument definitions: the options the plugin's class adds beyond the
fairseq class it extends, and each one's value after the architecture's defaults are filled in.
"""
from __future__ import annotations

import argparse
import sys


def _parser_of(add_args) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    add_args(p)
    return p


def _own_actions(cls, add_args_of) -> list:
    """The argparse actions ``cls`` adds beyond its fairseq parent's."""
    mine = _parser_of(add_args_of(cls))._actions
    theirs = set()
    for base in cls.__mro__[1:]:
        if not base.__module__.startswith("fairseq_syntax") and add_args_of(base) is not None:
            try:
                theirs = {a.dest for a in _parser_of(add_args_of(base))._actions}
            except Exception:  # a base without usable add_args
                continue
            break
    return [a for a in mine if a.dest not in theirs and a.option_strings]


def _model_add_args(cls):
    return getattr(cls, "add_args", None)


def _task_add_args(cls):
    from fairseq.dataclass.utils import gen_parser_from_dataclass
    from fairseq.tasks import TASK_DATACLASS_REGISTRY

    name = next((n for n, c in _task_registry().items() if c is cls), None)
    if name in TASK_DATACLASS_REGISTRY:
        return lambda p: gen_parser_from_dataclass(p, TASK_DATACLASS_REGISTRY[name]())
    dc = getattr(cls, "__dataclass", None)
    if dc is not None:
        return lambda p: gen_parser_from_dataclass(p, dc())
    return getattr(cls, "add_args", None)


def _task_registry():
    from fairseq.tasks import TASK_REGISTRY

    return TASK_REGISTRY


def plugin_names() -> tuple[list[str], list[str]]:
    from fairseq.models import ARCH_MODEL_REGISTRY

    import fairseq_syntax

    fairseq_syntax.register()
    archs = sorted(a for a, m in ARCH_MODEL_REGISTRY.items() if m.__module__.startswith("fairseq_syntax"))
    tasks = sorted(t for t, c in _task_registry().items() if c.__module__.startswith("fairseq_syntax"))
    return archs, tasks


def option_rows(name: str) -> list[tuple[str, str, str]]:
    """(option, default, help) of the options the plugin adds to architecture or task ``name``."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY

    archs, tasks = plugin_names()
    if name in ARCH_MODEL_REGISTRY:
        cls = ARCH_MODEL_REGISTRY[name]
        actions = _own_actions(cls, _model_add_args)
        args = argparse.Namespace()
        ARCH_CONFIG_REGISTRY[name](args)
        if hasattr(cls, "fill_defaults"):
            for dest in ("encoder_attention_heads", "encoder_ffn_embed_dim", "dropout", "attention_dropout",
                         "activation_dropout"):
                getattr(args, dest, None)
            try:
                cls.fill_defaults(args)
            except (AttributeError, TypeError):
                pass
        defaults = vars(args)
    elif name in _task_registry():
        cls = _task_registry()[name]
        actions = _own_actions(cls, _task_add_args)
        defaults = {a.dest: a.default for a in actions}
    else:
        raise ValueError(f"{name!r} is neither an architecture nor a task; the plugin's are: "
                         f"{', '.join(archs + tasks)}")
    rows = []
    for a in actions:
        default = defaults.get(a.dest, a.default)
        if default is None or default is argparse.SUPPRESS:
            default = "–"
        if a.choices:
            help_text = f"{a.help or ''} ({'|'.join(map(str, a.choices))})".strip()
        else:
            help_text = a.help or ""
        rows.append((", ".join(a.option_strings), str(default), " ".join(help_text.split())))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="fairseq-syntax-options", description=__doc__.split("\n\n")[0],
                                epilog=__doc__.split("\n\n", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("name", nargs="?", help="an architecture (transformer_sgnet_small, roberta_sgnet_small, "
                                           "bidaf_sa_early, ...) or a task (syntax_sentence_ranking, ...)")
    p.add_argument("--list", action="store_true", help="the plugin's architectures and tasks")
    a = p.parse_args(argv)
    if a.list or not a.name:
        archs, tasks = plugin_names()
        print("architectures: " + " ".join(archs))
        print("tasks: " + " ".join(tasks))
        return 0
    try:
        rows = option_rows(a.name)
    except ValueError as e:
        print(f"fairseq-syntax-options: error: {e}", file=sys.stderr)
        return 1
    print("| option | default | what it does |")
    print("|---|---|---|")
    for opt, default, text in rows:
        print(f"| `{opt}` | {default} | {text.replace('|', '/')} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
