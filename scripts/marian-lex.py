#!/usr/bin/env python3
"""A lexical table for Marian's `--shortlist` (its text format: `target source p(t|s)` per line),
learned as `nmt shortlist` learns ours: IBM Model 1, 5 EM iterations from uniform, over the
training pairs segmented with Marian's own SentencePiece vocabularies. Marian's shortlists
usually come from fast_align, which is not on the default package indexes; IBM Model 1 is what
fast_align refines, and giving both systems the same estimator keeps the comparison about the
decoders.

usage: marian-lex.py SRC_SPM TGT_SPM TRAIN_SRC TRAIN_TGT OUT [K]
K (default 100) translations per source piece are written; Marian's `--shortlist OUT N K`
then keeps the N most frequent targets and the K best per source piece.
"""
import sys
from collections import Counter, defaultdict

import sentencepiece as spm


def main():
    src_spm, tgt_spm, src_file, tgt_file, out = sys.argv[1:6]
    keep = int(sys.argv[6]) if len(sys.argv) > 6 else 100
    sp_s, sp_t = spm.SentencePieceProcessor(model_file=src_spm), spm.SentencePieceProcessor(model_file=tgt_spm)
    with open(src_file, encoding="utf-8") as f:
        src = [sp_s.encode(l.strip(), out_type=str) for l in f]
    with open(tgt_file, encoding="utf-8") as f:
        tgt = [sp_t.encode(l.strip(), out_type=str) for l in f]
    pairs = list(zip(src, tgt))
    # t[s][w] = p(w | s), uniform over co-occurring targets to start.
    t = defaultdict(dict)
    for s_sent, t_sent in pairs:
        for s in set(s_sent):
            row = t[s]
            for w in t_sent:
                row[w] = 1.0
    for it in range(5):
        counts = defaultdict(Counter)
        for s_sent, t_sent in pairs:
            for w in t_sent:
                den = sum(t[s][w] for s in s_sent)
                if den > 0:
                    for s in s_sent:
                        counts[s][w] += t[s][w] / den
        for s, c in counts.items():
            total = sum(c.values())
            t[s] = {w: v / total for w, v in c.items()}
        print(f"marian-lex: EM iteration {it + 1} done", file=sys.stderr)
    with open(out, "w", encoding="utf-8") as f:
        for s, row in t.items():
            for w, p in sorted(row.items(), key=lambda x: -x[1])[:keep]:
                f.write(f"{w} {s} {p:.6g}\n")


if __name__ == "__main__":
    main()
