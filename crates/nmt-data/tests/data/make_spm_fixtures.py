"""Makes the SentencePiece fixtures of tests/spm.rs: a unigram and a BPE model of 400 pieces
trained on the bundled dev set's English side, and for 150 dev verses plus a few harder lines
the library's own pieces and decoded text (`text<TAB>pieces<TAB>decoded`).

usage (from the repository root, with `pip install sentencepiece==0.2.1`):
  python crates/nmt-data/tests/data/make_spm_fixtures.py
"""
import gzip
import os

import sentencepiece as spm

here = os.path.dirname(os.path.abspath(__file__))
with gzip.open(os.path.join(here, "../../../../data/bible-en-es/dev.en.gz"), "rt", encoding="utf-8") as f:
    lines = [l.rstrip("\n") for l in f]
train = os.path.join(here, "spm-train.tmp")
with open(train, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
extra = ["  Leading and   inner  spaces ", "Ｆｕｌｌｗｉｄｔｈ ｌｅｔｔｅｒｓ and ﬁ ligatures", "Zebedee's Ω unseen ✓ chars", "42, 1984 and 3.14!"]
for kind in ("unigram", "bpe"):
    prefix = os.path.join(here, f"spm-{kind}")
    spm.SentencePieceTrainer.train(input=train, model_prefix=prefix, model_type=kind, vocab_size=400,
                                   character_coverage=0.9995, num_threads=1, minloglevel=2)
    os.remove(prefix + ".vocab")
    sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
    with open(prefix + ".expected.tsv", "w", encoding="utf-8") as out:
        for text in lines[:150] + extra:
            ids = sp.encode(text)
            out.write(f"{text}\t{' '.join(sp.id_to_piece(i) for i in ids)}\t{sp.decode(ids)}\n")
os.remove(train)
