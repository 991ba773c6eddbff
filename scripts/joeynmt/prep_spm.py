"""Train one sentencepiece BPE model per language (vocab 8000) on the train split and write
JoeyNMT vocab files (one piece per line, in spm id order).

spm special ids are set to JoeyNMT's defaults (unk=0, pad=1, bos=2, eos=3), so the JoeyNMT
Vocabulary (specials first, then file entries, duplicates skipped) has exactly the spm
vocabulary with identical ids."""
import sys
import sentencepiece as spm

vocab_size = int(sys.argv[1]) if len(sys.argv) > 1 else 8000
for lang in ("en", "es"):
    spm.SentencePieceTrainer.train(
        input=f"data/train.{lang}",
        model_prefix=f"spm/spm.{lang}",
        model_type="bpe",
        vocab_size=vocab_size,
        character_coverage=1.0,
        unk_id=0, pad_id=1, bos_id=2, eos_id=3,
        unk_piece="<unk>", pad_piece="<pad>", bos_piece="<s>", eos_piece="</s>",
        num_threads=1,
        minloglevel=2,
    )
    sp = spm.SentencePieceProcessor(model_file=f"spm/spm.{lang}.model")
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    with open(f"spm/vocab.{lang}.txt", "w", encoding="utf-8") as f:
        f.write("\n".join(pieces) + "\n")
    print(lang, "spm pieces:", len(pieces))
