#!/usr/bin/env python3
"""Generate the golden BLEU / chrF fixtures for `crates/nmt-eval`.

The fixtures are produced by the real sacreBLEU from PyPI, so the Rust
implementation can be checked against it without Python at test time:

    pip install sacrebleu==2.6.0
    python3 scripts/gen_bleu_fixtures.py

This writes (and overwrites) `crates/nmt-eval/tests/fixtures/*.json`:

* `tokenize.json`      -- tokenizer outputs (13a, intl, none) for every line used
* `bleu_corpus.json`   -- corpus BLEU: statistics, score, signature, text and JSON output
* `bleu_sentence.json` -- sentence BLEU (effective order on, as sacreBLEU's CLI does)
* `chrf.json`          -- corpus and sentence chrF2 with sufficient statistics

Cases are hand-written edge cases (punctuation, quotes, Unicode letters and
symbols, numbers with separators, empty hypotheses and references, zero
matches, long lines, several references, lowercase, every tokenizer) plus
cases generated deterministically from `data/bible-en-es/test.es.gz` and
`test.en.gz` by seeded perturbations.
"""
import gzip
import json
import os
import random
import sys

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.metrics.bleu import _get_tokenizer
from sacrebleu.utils import sum_of_lists

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "crates", "nmt-eval", "tests", "fixtures")
DATA = os.path.join(ROOT, "data", "bible-en-es")

EDGE_LINES = [
    'The cat sat on the mat.',
    'The cat is on the mat.',
    'Hello, world! "Quoted" text (with parentheses) and [brackets] {braces}.',
    "It's John's book -- isn't it? Yes: it's his; 100% sure.",
    'He paid $1,000.50 for 2,500 items on 12/31/2023 at 10:30 a.m.',
    'Numbers: 1,000.5 and 3.14159, -42, 7-8, 1.000.000,00 and 2-3-4.',
    'Visit https://example.com/path?q=1&lang=en#top or mail me@example.org.',
    '&quot;Escaped&quot; &amp; &lt;tags&gt; are &amp;lt;double&amp;gt; escaped.',
    'Some <skipped> text with a hyphen-\nnewline and\nnewlines.',
    '“Curly quotes” and ‘single ones’ — em dash – en dash … ellipsis.',
    'Ünïcödé lëttérs: Straße, ÆØÅ, İstanbul, ΣΊΣΥΦΟΣ, Ωμέγα ΟΔΟΣ.',
    'Symbols: © ® ™ € £ ¥ § ¶ ° ± × ÷ → ← ∑ √ ∞ ≠ ≤ ≥ ♥ ★ 😀 🎉',
    '中文句子，包含标点。日本語の文、句読点。한국어 문장입니다.',
    'Arabic: مرحبا بالعالم، كيف حالك؟ Hebrew: שלום עולם.',
    'Tabs\tand   multiple    spaces\u00a0non-breaking\u2009thin\u3000ideographic.',
    'Trailing spaces and tabs   \t ',
    '   Leading spaces.',
    'A year 1999. And 2000, then 2001.',
    'end.',
    '.,;:!?',
    '...',
    'e.g. i.e. U.S.A. Mr. Smith vs. Dr. Jones',
    "Don't stop-believing; hold on to that feel-in'!",
    'Price: 5.00-6.00 USD, 5,00-6,00 EUR.',
    '¿Qué pasa? ¡Nada! «Comillas» y “más”.',
    'MiXeD CaSe WoRdS And ALL CAPS',
    'mixed case words and all caps',
    'ﬁ ligature and Ǆ digraph and ß and ǅ titlecase',
    'Final sigma: ΟΔΟΣ ΣΟΦΟΣ Σ.',
    'Combining: e\u0301 a\u0300 n\u0303 vs é à ñ.',
    'x',
    '',
    'a b c d e f g h',
    'h g f e d c b a',
    'the the the the the the the',
    'the',
    'Control\x1cchars\x1dand\x1eseparators\x1fhere.',
    'Zero width\u200bspace and\u200cjoiner.',
    '1/2 + 3/4 = 5/4; 2^10 = 1024; a*b; ~tilde~ `backtick` |pipe| \\back\\slash',
    '#hashtag @mention _underscore_ under_score',
    '(hi) [there] {you}',
    "can't won't shouldn't 'quoted'",
    'Temperature is -5.5°C, or 22.1°F.',
    '3.14.15 1,2,3 1.2,3 a.1 1.a ,1 .5 5.',
]


def read_lines(path, n=None):
    out = []
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
        for line in f:
            out.append(line.rstrip("\n"))
            if n is not None and len(out) >= n:
                break
    return out


def perturb(rng, line):
    """A deterministic, varied corruption of a sentence (a fake system output)."""
    words = line.split()
    kind = rng.randrange(10)
    if kind == 0 and words:  # drop words
        words = [w for w in words if rng.random() > 0.2]
    elif kind == 1 and len(words) > 1:  # swap neighbours
        for _ in range(max(1, len(words) // 5)):
            i = rng.randrange(len(words) - 1)
            words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == 2 and words:  # duplicate words
        i = rng.randrange(len(words))
        words.insert(i, words[i])
    elif kind == 3:  # truncate
        words = words[: max(0, len(words) - rng.randrange(1, 8))]
    elif kind == 4:  # case changes
        words = [w.upper() if rng.random() < 0.2 else w.lower() if rng.random() < 0.3 else w for w in words]
    elif kind == 5 and words:  # punctuation noise
        words = [w + rng.choice([",", ".", ";", "!", "?", ":", "'", '"']) if rng.random() < 0.15 else w for w in words]
    elif kind == 6:  # numbers with separators
        words.insert(rng.randrange(len(words) + 1), rng.choice(["1,000.5", "3.14", "2-3", "10,000", "5.", "-7"]))
    elif kind == 7 and words:  # replace words
        vocab = ["casa", "perro", "Dios", "tierra", "el", "la", "de", "y", "que", "fué"]
        words = [rng.choice(vocab) if rng.random() < 0.25 else w for w in words]
    elif kind == 8:  # unchanged
        pass
    else:  # strip accents-ish / symbol noise
        words = [w.replace("á", "a").replace("é", "e") for w in words]
        if rng.random() < 0.5:
            words.append(rng.choice(["©", "€", "→", "😀", "&amp;", "&quot;"]))
    return " ".join(words)


def bleu_result(hyps, refs, lowercase, tokenize, sentence):
    metric = BLEU(lowercase=lowercase, tokenize=tokenize, effective_order=sentence)
    if sentence:
        score = metric.sentence_score(hyps[0], [r[0] for r in refs])
    else:
        score = metric.corpus_score(hyps, refs)
    sig = metric.get_signature().format()
    return {
        "score": score.score,
        "counts": list(score.counts),
        "totals": list(score.totals),
        "precisions": list(score.precisions),
        "bp": score.bp,
        "sys_len": score.sys_len,
        "ref_len": score.ref_len,
        "signature": sig,
        "text": score.format(signature=sig),
        "text_plain": score.format(),
        "json": score.format(signature=sig, is_json=True),
    }


def chrf_result(hyps, refs, lowercase, sentence):
    metric = CHRF(lowercase=lowercase)
    if sentence:
        score = metric.sentence_score(hyps[0], [r[0] for r in refs])
        stats = metric._extract_corpus_statistics([hyps[0]], refs)
    else:
        score = metric.corpus_score(hyps, refs)
        stats = metric._extract_corpus_statistics(hyps, refs)
    sig = metric.get_signature().format()
    return {
        "score": score.score,
        "stats": [int(x) for x in sum_of_lists(stats)],
        "signature": sig,
        "text": score.format(signature=sig),
        "json": score.format(signature=sig, is_json=True),
    }


def main():
    assert sacrebleu.__version__ == "2.6.0", f"need sacrebleu 2.6.0, found {sacrebleu.__version__}"
    rng = random.Random(20240603)
    es = read_lines(os.path.join(DATA, "test.es.gz"), 400)
    en = read_lines(os.path.join(DATA, "test.en.gz"), 400)
    toks = ["13a", "intl", "none"]

    corpus, sentence, chrf = [], [], []

    def add_corpus(name, hyps, refs, lowercase=False, tokenize="13a"):
        corpus.append({"name": name, "lowercase": lowercase, "tokenize": tokenize,
                       "hyps": hyps, "refs": refs,
                       "expected": bleu_result(hyps, refs, lowercase, tokenize, False)})

    def add_sentence(name, hyp, refs, lowercase=False, tokenize="13a"):
        sentence.append({"name": name, "lowercase": lowercase, "tokenize": tokenize,
                         "hyp": hyp, "refs": refs,
                         "expected": bleu_result([hyp], [[r] for r in refs], lowercase, tokenize, True)})

    def add_chrf(name, hyps, refs, lowercase=False, sentence_level=False):
        chrf.append({"name": name, "lowercase": lowercase, "sentence": sentence_level,
                     "hyps": hyps, "refs": refs,
                     "expected": chrf_result(hyps, refs, lowercase, sentence_level)})

    # --- hand-written edge cases -------------------------------------------
    E = EDGE_LINES
    for tok in toks:
        for lc in (False, True):
            add_corpus(f"edge-self-{tok}-lc{lc}", E, [E], lc, tok)
            add_corpus(f"edge-shift-{tok}-lc{lc}", E, [E[1:] + E[:1]], lc, tok)
            add_corpus(f"edge-perturbed-{tok}-lc{lc}", [perturb(rng, x) for x in E], [E], lc, tok)
    add_corpus("zero-matches", ["a b c", "d e f"], [["x y z", "u v w"]])
    add_corpus("all-empty-hyps", ["", ""], [["a b c", "d e"]])
    add_corpus("all-empty-refs", ["a b c", "d e"], [["", ""]])
    add_corpus("all-empty", ["", ""], [["", ""]])
    add_corpus("some-empty", ["", "the cat", "a dog sat"], [["a", "", "a dog sat here"]])
    add_corpus("unigram-only-match", ["a b c d"], [["d c b a"]])
    add_corpus("no-4gram", ["the cat sat on"], [["the cat sat down on"]])
    add_corpus("short-hyps", ["a", "b c", "d e f"], [["a", "b c", "d e f"]])
    add_corpus("longer-hyp", ["the cat sat on the mat and more words here"], [["the cat sat on the mat"]])
    add_corpus("multi-ref-closest", ["a b c d e"], [["a b c"], ["a b c d e f g"], ["a b c d e f"]])
    add_corpus("multi-ref-tie-shorter", ["a b c d"], [["a b c"], ["a b c d e"]])
    add_corpus("multi-ref-max-counts", ["the the the cat"], [["the cat"], ["the the cat"]])
    add_corpus("multi-ref-empty-stream", ["the cat sat", "on the mat", "a dog"],
               [["the cat sat", "", "a dog"], ["", "on a mat", ""]])
    add_corpus("multi-ref-3", [perturb(rng, x) for x in es[:20]], [es[:20], en[:20], es[20:40]])
    long_line = " ".join(es[40:60])
    add_corpus("long-lines", [perturb(rng, long_line), long_line], [[long_line, perturb(rng, long_line)]])
    add_corpus("long-lines-intl", [perturb(rng, long_line)], [[long_line]], False, "intl")
    add_corpus("repeated-long", [("la " * 500).strip()], [[("la " * 300).strip()]])
    add_corpus("numbers", ["It costs 1,000.5 dollars or 1.000,5 euros.", "Call 555-1234 at 10:30."],
               [["It costs 1,000.5 dollars or 1000.5 euros.", "Call 555 - 1234 at 10 : 30 ."]])
    for tok in toks:
        add_corpus(f"numbers-{tok}", ["1,000.5 2,5 3. .4 5-6 a-b 7.8.9"], [["1,000.5 2 , 5 3 . .4 5 - 6 a-b 7.8.9"]], False, tok)

    for i in range(len(E)):
        for tok in toks:
            add_sentence(f"edge-sent-{i}-{tok}", perturb(rng, E[i]), [E[i]], i % 2 == 1, tok)
    add_sentence("sent-empty-hyp", "", ["a b c"])
    add_sentence("sent-empty-ref", "a b c", [""])
    add_sentence("sent-zero", "a b c", ["d e f"])
    add_sentence("sent-multi", "the cat sat on the mat", ["the cat is on the mat", "a cat sat on a mat", ""])
    add_sentence("sent-one-word", "cat", ["cat"])
    add_sentence("sent-two-words", "the cat", ["the cat"])
    add_sentence("sent-three-words", "the cat sat", ["the cat sat on"])

    add_chrf("chrf-edge-self", E, [E])
    add_chrf("chrf-edge-perturbed", [perturb(rng, x) for x in E], [E])
    add_chrf("chrf-edge-perturbed-lc", [perturb(rng, x) for x in E], [E], True)
    add_chrf("chrf-empty-hyps", ["", ""], [["a b", "c"]])
    add_chrf("chrf-empty-refs", ["a b", "c"], [["", ""]])
    add_chrf("chrf-zero", ["abc"], [["xyz"]])
    add_chrf("chrf-multi-ref", ["the cat sat", "on the mat", "a dog"],
             [["the cat sat", "", "a dog"], ["", "on a mat", ""]])
    for i, line in enumerate(E):
        add_chrf(f"chrf-sent-edge-{i}", [perturb(rng, line)], [[line]], i % 3 == 0, True)

    # --- generated from the Bible test set ----------------------------------
    for k in range(60):
        n = rng.randrange(1, 40)
        start = rng.randrange(0, len(es) - n)
        src_lines = es if k % 3 else en
        refs0 = src_lines[start:start + n]
        hyps = [perturb(rng, x) for x in refs0]
        nref = 1 + (k % 5 == 0) + (k % 10 == 0)
        refs = [refs0] + [[perturb(rng, x) if rng.random() < 0.8 else "" for x in refs0] for _ in range(nref - 1)]
        tok = toks[k % 3] if k % 4 else "13a"
        lc = k % 7 == 3
        add_corpus(f"bible-corpus-{k}", hyps, refs, lc, tok)
    for k in range(90):
        i = rng.randrange(len(es))
        src_lines = es if k % 2 else en
        ref = src_lines[i]
        refs = [ref] + ([perturb(rng, ref)] if k % 6 == 0 else [])
        add_sentence(f"bible-sent-{k}", perturb(rng, ref), refs, k % 5 == 1, toks[k % 3])
    for k in range(30):
        n = rng.randrange(1, 25)
        start = rng.randrange(0, len(es) - n)
        refs0 = es[start:start + n]
        hyps = [perturb(rng, x) for x in refs0]
        refs = [refs0] + ([[perturb(rng, x) for x in refs0]] if k % 4 == 0 else [])
        add_chrf(f"bible-chrf-corpus-{k}", hyps, refs, k % 5 == 2)
    for k in range(40):
        i = rng.randrange(len(en))
        ref = en[i]
        refs = [[ref]] + ([[perturb(rng, ref)]] if k % 5 == 0 else [])
        add_chrf(f"bible-chrf-sent-{k}", [perturb(rng, ref)], refs, k % 4 == 1, True)

    # --- tokenizer outputs ---------------------------------------------------
    tok_lines = list(E) + es[:100] + en[:100] + [perturb(rng, x) for x in es[100:200]]
    tokenizers = {t: _get_tokenizer(t)() for t in toks}
    tok_cases = [{"line": line, **{t: tokenizers[t](line) for t in toks}} for line in tok_lines]

    os.makedirs(OUT, exist_ok=True)
    meta = {"sacrebleu_version": sacrebleu.__version__, "generator": "scripts/gen_bleu_fixtures.py"}
    for name, cases in [("bleu_corpus", corpus), ("bleu_sentence", sentence), ("chrf", chrf), ("tokenize", tok_cases)]:
        with open(os.path.join(OUT, f"{name}.json"), "w", encoding="utf-8") as f:
            json.dump({**meta, "cases": cases}, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"{name}: {len(cases)} cases", file=sys.stderr)
    total = len(corpus) + len(sentence) + len(chrf)
    print(f"total metric cases: {total}, tokenizer cases: {len(tok_cases)}", file=sys.stderr)


if __name__ == "__main__":
    main()
