"""fairseq_syntax: syntax-guided attention (SG-Net, syntax-aware local attention) for fairseq."""
from setuptools import find_packages, setup

setup(
    name="fairseq_syntax",
    version="0.1.0",
    description="Syntax-guided Transformer attention (SG-Net) as a fairseq plugin",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    license="MIT",
    classifiers=["License :: OSI Approved :: MIT License"],
    # Ranges, not pins: the plugin installs into a user's own GPU environment and keeps its torch and fairseq.
    # The exact versions of the reproducible set-up are in requirements.txt (scripts/setup.sh).
    python_requires=">=3.10",
    packages=find_packages(include=["fairseq_syntax", "fairseq_syntax.*"]),
    install_requires=[
        "torch>=2.0",  # scaled_dot_product_attention with a boolean mask
        # fairseq 0.12 from PyPI builds on Python <= 3.10; fairseq-fixed is the same code for 3.11 and newer
        'fairseq>=0.12.2,<0.13; python_version < "3.11"',
        'fairseq-fixed>=0.12.3,<0.13; python_version >= "3.11"',
        "numpy>=1.21",
        "sacrebleu>=2.0,<3",
        "subword-nmt>=0.3.8,<0.4",
        "sacremoses>=0.0.53",
        "tqdm",
    ],
    extras_require={
        # parsers for raw text; a user who brings CoNLL-U parses needs neither
        "spacy": ["spacy>=3.5,<4"],
        "stanza": ["stanza>=1.5,<2"],
        "test": ["pytest>=7"],
        "plots": ["matplotlib>=3.5"],
    },
    entry_points={
        "console_scripts": [
            "fairseq-syntax-parse = fairseq_syntax.cli.parse:main",
            "fairseq-syntax-align = fairseq_syntax.cli.align:main",
            "fairseq-syntax-binarize-heads = fairseq_syntax.cli.binarize_heads:main",
            "fairseq-syntax-text = fairseq_syntax.cli.text:main",
            "fairseq-syntax-user-dir = fairseq_syntax:print_user_dir",
            "fairseq-syntax-convert-hf = fairseq_syntax.cli.convert_hf:main",
            "fairseq-syntax-convert-bert = fairseq_syntax.cli.convert_hf:main",  # its older name
            "fairseq-syntax-classification = fairseq_syntax.cli.glue_conll_prep:main",
            "fairseq-syntax-lambada = fairseq_syntax.reader.lambada_prep:main",
            "fairseq-syntax-lambada-eval = fairseq_syntax.reader.lambada_eval:main",
            "fairseq-syntax-average = fairseq_syntax.cli.average:main",
            "fairseq-syntax-provenance = fairseq_syntax.cli.provenance:main",
            "fairseq-syntax-prep = fairseq_syntax.data_prep.cli:main",
            "fairseq-syntax-race = fairseq_syntax.race.prep:main",
            "fairseq-syntax-race-eval = fairseq_syntax.race.evaluate:main",
            "fairseq-syntax-ner-eval = fairseq_syntax.cli.ner_eval:main",
            "fairseq-syntax-sentence-eval = fairseq_syntax.cli.sentence_eval:main",
            "fairseq-syntax-options = fairseq_syntax.cli.options:main",
        ]
    },
)
