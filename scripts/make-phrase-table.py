#!/usr/bin/env python3
"""A synthetic Moses phrase table from the bundled corpus, for `nmt score --phrase-table`
throughput and memory (scripts/phrase-table-bench.sh).

    scripts/make-phrase-table.py LINES OUT.gz [SEED]

Each line pairs a random 1-5-word span of an English training verse with the span at the
same relative position of its Spanish verse, followed by four feature values, a word
alignment and counts: the 5-field layout Moses writes. Standard library only; deterministic.
"""
import gzip
import random
import sys


def main() -> None:
    lines, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    with gzip.open("data/bible-en-es/train.en.gz", "rt", encoding="utf-8") as f:
        en = [l.split() for l in f]
    with gzip.open("data/bible-en-es/train.es.gz", "rt", encoding="utf-8") as f:
        es = [l.split() for l in f]
    pairs = [(e, s) for e, s in zip(en, es) if e and s]
    with gzip.open(out, "wt", encoding="utf-8", compresslevel=1) as w:
        for _ in range(lines):
            e, s = pairs[rng.randrange(len(pairs))]
            k = rng.randint(1, min(5, len(e)))
            i = rng.randrange(len(e) - k + 1)
            ks = max(1, min(len(s), round(k * len(s) / len(e))))
            j = min(len(s) - ks, round(i * len(s) / len(e)))
            feats = " ".join(f"{rng.random():.6g}" for _ in range(4))
            align = " ".join(f"{a}-{min(a, ks - 1)}" for a in range(k))
            w.write(f"{' '.join(e[i:i + k])} ||| {' '.join(s[j:j + ks])} ||| {feats} ||| {align} ||| 1 1 1\n")


if __name__ == "__main__":
    main()
