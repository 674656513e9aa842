"""fairseq_syntax: syntax-guided attention (SG-Net, syntax-aware local attention) for fairseq."""
from setuptools import find_packages, setup

setup(
    name="fairseq_syntax",
    version="0.1.0",
    description="Syntax-guided Transformer attention (SG-Net) as a fairseq plugin",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11,<3.12",
    packages=find_packages(include=["fairseq_syntax", "fairseq_syntax.*"]),
    # fairseq itself comes from requirements.txt (fairseq-fixed, built without build isolation
    # against the CPU torch); see scripts/setup.sh.
    install_requires=[
        "torch==2.13.0",
        "sacrebleu==2.6.0",
        "subword-nmt==0.3.8",
        "sacremoses==0.2.0",
        "spacy==3.8.18",
        "stanza==1.15.0",
        "numpy",
        "tqdm",
    ],
    extras_require={"test": ["pytest==9.2.0"], "plots": ["matplotlib==3.11.2"]},
    entry_points={
        "console_scripts": [
            "fairseq-syntax-parse = fairseq_syntax.cli.parse:main",
            "fairseq-syntax-align = fairseq_syntax.cli.align:main",
            "fairseq-syntax-binarize-heads = fairseq_syntax.cli.binarize_heads:main",
            "fairseq-syntax-text = fairseq_syntax.cli.text:main",
            "fairseq-syntax-user-dir = fairseq_syntax:print_user_dir",
            "fairseq-syntax-convert-bert = fairseq_syntax.cli.convert_bert:main",
            "fairseq-syntax-classification = fairseq_syntax.cli.classification_prep:main",
            "fairseq-syntax-lambada = fairseq_syntax.cli.lambada_prep:main",
            "fairseq-syntax-lambada-eval = fairseq_syntax.cli.lambada_eval:main",
        ]
    },
)
