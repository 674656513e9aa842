"""Byte-level BPE (GPT-2's, RoBERTa's and BART's) aligned to a parser's words, hand-worked case by case: the leading
space, bytes that split inside a character, several spaces, tabs, punctuation glued to words, numbers, and
contractions that the parser splits and BPE does not, and the reverse. The pieces are written out as GPT-2's
pre-tokenizer cuts the text (a space joins the token after it; runs of white space stand alone)."""
import pytest

from fairseq_syntax.syntax.byte_bpe import byte_bpe_head_codes, contract_heads, piece_words


def pieces(*parts):
    return [p.encode("utf-8") if isinstance(p, str) else p for p in parts]


def test_the_leading_space_never_decides_a_pieces_word():
    # "The dog barks": The <- dog (head 2), dog <- barks (head 3), barks root
    p = pieces("The", " dog", " bark", "s")
    assert piece_words("The dog barks", ["The", "dog", "barks"], p) == [0, 1, 2, 2]
    # codes: word starts at pieces 0, 1, 2; The -> dog at position 2, dog -> barks at 3, barks root at 3, "s" -> 3
    assert byte_bpe_head_codes("The dog barks", ["The", "dog", "barks"], [2, 3, 0], p) == [2, 3, 3, -3]


def test_bytes_that_split_inside_a_character():
    # "café au lait": é is c3 a9, cut between two pieces; "été": a word starting inside a cut character
    text = "café au lait"
    p = [b"caf", b"\xc3", b"\xa9", b" au", b" lait"]
    assert piece_words(text, ["café", "au", "lait"], p) == [0, 0, 0, 1, 2]
    p = [b"\xc3", b"\xa9t\xc3\xa9", b" ici"]
    assert piece_words("été ici", ["été", "ici"], p) == [0, 0, 1]
    assert byte_bpe_head_codes("été ici", ["été", "ici"], [0, 1], p) == [1, -1, 1]


def test_several_spaces_tabs_and_leading_white_space():
    # GPT-2 cuts "a  b" into "a", " ", " b": the lone space continues "a"
    assert piece_words("a  b", ["a", "b"], pieces("a", " ", " b")) == [0, 0, 1]
    assert piece_words("a\tb", ["a", "b"], pieces("a", "\t", "b")) == [0, 0, 1]
    # white space before the first word belongs to the first word, which then starts at piece 0
    assert piece_words("  a b", ["a", "b"], pieces(" ", " a", " b")) == [0, 0, 1]
    assert byte_bpe_head_codes("  a b", ["a", "b"], [2, 0], pieces(" ", " a", " b")) == [3, -1, 3]
    # and a trailing newline continues the last word
    assert piece_words("a b\n", ["a", "b"], pieces("a", " b", "\n")) == [0, 1, 1]


def test_punctuation_glued_to_words_and_numbers():
    # "Hello, world!" parsed Hello , world !   GPT-2: "Hello" "," " world" "!"
    assert piece_words("Hello, world!", ["Hello", ",", "world", "!"],
                       pieces("Hello", ",", " world", "!")) == [0, 1, 2, 3]
    # "in 2023": GPT-2 cuts the number into " 20" "23", one word
    assert piece_words("in 2023", ["in", "2023"], pieces("in", " 20", "23")) == [0, 1, 1]
    # a piece holding punctuation and the next word's start ("(" glued): ".(" over words "." "(" "x"
    assert piece_words("a.(x", ["a", ".", "(", "x"], pieces("a", ".(", "x")) == [0, 1, 3]  # "(" joins "."


def test_a_contraction_the_parser_splits_where_bpe_splits_elsewhere():
    # spaCy: "ca" "n't" "go"; GPT-2: "can" "'t" " go": "can" starts in "ca", "'t" starts in "n't"
    words, heads = ["ca", "n't", "go"], [3, 3, 0]
    p = pieces("can", "'t", " go")
    assert piece_words("can't go", words, p) == [0, 1, 2]
    assert byte_bpe_head_codes("can't go", words, heads, p) == [3, 3, 3]


def test_a_word_no_piece_starts_in_joins_the_word_before_and_the_tree_is_contracted():
    # spaCy: "can" "not" "go" (can -> go, not -> go, go root); GPT-2 keeps "cannot" whole: "not" joins "can"
    words, heads = ["can", "not", "go"], [3, 3, 0]
    p = pieces("cannot", " go")
    assert piece_words("cannot go", words, p) == [0, 2]
    assert byte_bpe_head_codes("cannot go", words, heads, p) == [2, 2]
    # the joined word is the head of the other: "gonna" parsed "gon" (root) "na" (-> gon) in one piece
    assert byte_bpe_head_codes("gonna win", ["gon", "na", "win"], [0, 1, 1], pieces("gonna", " win")) == [1, 1]
    # the joined word is the group's topmost: its head outside the group becomes the group's
    assert contract_heads([2, 0, 2], [0, 0, 1]) == [0, 1]
    assert contract_heads([3, 1, 0], [0, 0, 1]) == [2, 0]


def test_a_mismatch_is_named_never_shifted():
    with pytest.raises(ValueError, match=r"line 7: word 2 'cat' is not the next text"):
        piece_words("the dog", ["the", "cat"], pieces("the", " dog"), "line 7")
    with pytest.raises(ValueError, match=r"line 7: the pieces spell"):
        piece_words("the dog", ["the", "dog"], pieces("the", " do"), "line 7")
    with pytest.raises(ValueError, match=r"line 7: the text goes on after the last word"):
        piece_words("the dog ran", ["the", "dog"], pieces("the", " dog", " ran"), "line 7")
    with pytest.raises(ValueError, match=r"line 7: 2 words but 3 heads"):
        byte_bpe_head_codes("the dog", ["the", "dog"], [2, 0, 2], pieces("the", " dog"), "line 7")


def test_through_fairseqs_own_gpt2_encoder_on_real_sentences(tmp_path):
    """A byte-level BPE trained here on real RTE sentences (tokenizers), written as GPT-2's encoder.json and
    vocab.bpe and read by fairseq's own encoder, on raw text spaCy parses: every piece gets a code, every word that
    a piece starts in is a word start, and the pieces spell the text."""
    import spacy
    from fairseq.data.encoders.gpt2_bpe_utils import get_encoder
    from tokenizers import ByteLevelBPETokenizer

    from fairseq_syntax.parsing.backends import SPACY_DEFAULT_MODEL
    from fairseq_syntax.syntax import check_subword_heads
    from fairseq_syntax.syntax.byte_bpe import gpt2_pieces

    from .conftest import SHARED_DATA

    rows = [line.rstrip("\n").split("\t") for line in
            list(open(SHARED_DATA / "glue/RTE/dev.tsv", encoding="utf-8"))[1:]]
    texts = [r[1] for r in rows[:120]] + [r[2] for r in rows[:120]]
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(texts, vocab_size=700, min_frequency=2, show_progress=False)
    bpe.save_model(str(tmp_path))  # vocab.json and merges.txt: GPT-2's encoder.json and vocab.bpe
    encoder = get_encoder(str(tmp_path / "vocab.json"), str(tmp_path / "merges.txt"))
    nlp = spacy.load(SPACY_DEFAULT_MODEL, exclude=["ner", "lemmatizer"])
    extra = ["Café  déjà vu,\tnaïve résumé!", "I can't go; we cannot wait (in 2023).", "  Leading spaces end."]
    aligned = 0
    for k, doc in enumerate(nlp.pipe(texts[:60] + extra)):
        text = doc.text
        words = [t.text for t in doc if not t.is_space]
        index = {t.i: n for n, t in enumerate(t for t in doc if not t.is_space)}
        heads = [0 if t.head.i == t.i else index[t.head.i] + 1 for t in doc if not t.is_space]
        p = gpt2_pieces(encoder, text)
        assert b"".join(p) == text.encode("utf-8")
        codes = byte_bpe_head_codes(text, words, heads, p, f"sentence {k + 1}")
        assert len(codes) == len(p)
        check_subword_heads(codes, f"sentence {k + 1}")
        aligned += len(p)
    assert aligned > 1000


class _Proto:
    """What sentencepiece's proto gives of a piece: the piece and its surface's byte offsets in the raw text."""

    def __init__(self, *pieces):
        self.pieces = [type("Piece", (), {"piece": p, "begin": b, "end": e}) for p, b, e in pieces]


def sentencepiece_with(*pieces):
    """XLM-R's pieces as sentencepiece gives them for one text (written out by hand), through PretrainedPieces."""
    from fairseq_syntax.data.pretrained_pieces import PretrainedPieces

    reader = PretrainedPieces.__new__(PretrainedPieces)
    reader.scheme = "sentencepiece"
    reader.spm = type("Spm", (), {"encode": lambda self, text, return_type: _Proto(*pieces)})()
    return reader


def test_sentencepiece_pieces_take_the_white_space_its_normalization_drops():
    # "a  b": sentencepiece keeps "▁a" (0-1) and "▁b" (1-4: its surface holds both spaces); the bytes tile the text
    sp = sentencepiece_with(("▁a", 0, 1), ("▁b", 1, 4))
    assert sp.sentencepiece_pieces("a  b", "s") == (["▁a", "▁b"], [b"a", b"  b"])
    # a gap between surfaces (offsets that skip the spaces) and a trailing space: the next piece, the last piece
    sp = sentencepiece_with(("▁a", 0, 1), ("▁b", 3, 4))
    assert sp.sentencepiece_pieces("a  b ", "s")[1] == [b"a", b"  b "]
    symbols, codes = sp.encode(["a", "b"], [2, 0], "s", "a  b ")
    assert symbols == ["▁a", "▁b"] and codes == [2, 2]


def test_a_lone_word_start_goes_with_the_word_after_it():
    # "x (1)": "▁" (surface " ") then "(" glued: the "▁" starts the word "(", as sentencepiece's marker says
    sp = sentencepiece_with(("▁x", 0, 1), ("▁", 1, 2), ("(", 2, 3), ("1", 3, 4), (")", 4, 5))
    symbols, p = sp.sentencepiece_pieces("x (1)", "s")
    assert p == [b"x", b"", b" (", b"1", b")"]
    assert piece_words("x (1)", ["x", "(", "1", ")"], p) == [0, 1, 1, 2, 3]
    # x root; ( -> 1; 1 -> x; ) -> 1: the "▁" carries "("'s head (position of "1": 4), "(" continues it (-2)
    assert sp.encode(["x", "(", "1", ")"], [0, 3, 1, 3], "s", "x (1)")[1] == [1, 4, -2, 1, 4]


def test_a_normalized_character_keeps_its_word_start():
    # "x ﬁne": NFKC makes "ﬁ" two letters; sentencepiece gives "▁f" the space alone and "ine" the ligature's bytes
    text = "x ﬁne"
    sp = sentencepiece_with(("▁x", 0, 1), ("▁f", 1, 2), ("ine", 2, 7))
    symbols, p = sp.sentencepiece_pieces(text, "s")
    assert p == [b"x", b"", " ﬁne".encode("utf-8")]
    assert sp.encode(["x", "ﬁne"], [0, 1], "s", text)[1] == [1, 1, -2]
