"""The nmt Python package against the `nmt` command line (the same library must give the same
text and scores), plus training, errors and the GIL.

Needs the CLI binary: $NMT_BIN, else target/release/nmt of the checkout (.ci/run builds it).
"""
import gzip
import os
import subprocess
import threading
import time
from pathlib import Path

import numpy
import pytest

import nmt

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "data" / "bible-en-es"


def nmt_bin() -> str:
    path = os.environ.get("NMT_BIN") or str(ROOT / "target" / "release" / "nmt")
    if not Path(path).exists():
        pytest.fail(f"the nmt binary is needed to compare with: build it or set NMT_BIN (looked for {path})")
    return path


def cli(*args, stdin=None) -> str:
    out = subprocess.run([nmt_bin(), *args], input=stdin, capture_output=True, text=True, env={**os.environ, "NMT_LOG": "error"})
    assert out.returncode == 0, out.stderr
    return out.stdout


def lines(name: str, n: int):
    with gzip.open(DATA / name, "rt", encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def write_config(d: Path, pairs: int = 400, steps: int = 60) -> Path:
    """A tiny RNNsearch on the first `pairs` Bible verses (files named *.en / *.es, so the
    model knows its languages)."""
    (d / "train.en").write_text("\n".join(lines("train.en.gz", pairs)) + "\n", encoding="utf-8")
    (d / "train.es").write_text("\n".join(lines("train.es.gz", pairs)) + "\n", encoding="utf-8")
    cfg = d / "tiny.toml"
    cfg.write_text(
        '[model]\npreset = "tiny"\n[data]\ntrain_src = "train.en"\ntrain_tgt = "train.es"\n'
        'dev_src = "train.en"\ndev_tgt = "train.es"\n'
        'src_subword = { kind = "word", vocab_size = 400 }\ntgt_subword = { kind = "word", vocab_size = 400 }\n'
        f"[train]\nmax_steps = {steps}\nvalid_every = {steps}\nvalid_bleu_sentences = 20\n",
        encoding="utf-8",
    )
    return cfg


@pytest.fixture(scope="session")
def model(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("model")
    summary = nmt.train(write_config(d), d / "m", threads=2, progress=False)
    assert summary["steps"] == 60
    return d / "m" / "model.safetensors"


@pytest.fixture(scope="session")
def sources():
    return lines("test.en.gz", 50)


@pytest.mark.parametrize("beam,nbest", [(1, None), (5, None), (5, 3)])
def test_translate_batch_equals_the_cli(model, sources, tmp_path, beam, nbest):
    src = tmp_path / "src.en"
    src.write_text("\n".join(sources) + "\n", encoding="utf-8")
    args = ["translate", "-m", str(model), "-i", str(src), "-b", str(beam), "--threads", "1"]
    if nbest:
        args += ["--n-best", str(nbest)]
    want = cli(*args).splitlines()
    got = nmt.Translator(str(model), threads=1).translate_batch(sources, beam_size=beam, num_hypotheses=nbest or 1)
    assert len(got) == len(sources)
    if not nbest:
        assert [r.hypotheses[0] for r in got] == want
        return
    rows = [(i, h, lp, s) for i, r in enumerate(got) for h, lp, s in zip(r.hypotheses, r.log_probs, r.scores)]
    assert len(rows) == len(want)
    for (i, h, lp, s), line in zip(rows, want):
        wid, wtext, wlp, ws = line.split(" ||| ")
        assert (int(wid), wtext) == (i, h)
        assert abs(float(wlp.split("= ")[1]) - lp) < 1e-5
        assert abs(float(ws) - s) < 1e-5


def test_int8_and_the_shortlist_equal_the_cli(model, sources, tmp_path):
    """`nmt.train` ends by learning the shortlist into the model file, as `nmt train` does."""
    src = tmp_path / "src.en"
    src.write_text("\n".join(sources) + "\n", encoding="utf-8")
    for flags, load, call in [
        (["--int8"], {"compute_type": "int8"}, {}),
        (["--shortlist"], {}, {"use_vmap": True}),
        (["--int8", "--shortlist"], {"compute_type": "int8"}, {"use_vmap": True}),
    ]:
        want = cli("translate", "-m", str(model), "-i", str(src), "-b", "5", "--threads", "1", *flags).splitlines()
        got = nmt.Translator(str(model), threads=1, **load).translate_batch(sources, beam_size=5, **call)
        assert [r.hypotheses[0] for r in got] == want, flags
    with pytest.raises(ValueError, match="compute_type"):
        nmt.Translator(str(model), compute_type="int4")


def test_translate_iterable_keeps_the_order(model, sources):
    t = nmt.Translator(model)
    batch = [r.hypotheses[0] for r in t.translate_batch(sources, beam_size=2)]
    streamed = [r.hypotheses[0] for r in t.translate_iterable(iter(sources), batch_size=7, beam_size=2)]
    assert streamed == batch


def test_attention_arrays(model, sources):
    results = nmt.Translator(model).translate_batch(sources[:10], num_hypotheses=2, return_attention=True)
    for r in results:
        assert len(r.attention) == len(r.hypotheses) == 2
        for toks, a in zip(r.tokens, r.attention):
            assert isinstance(a, numpy.ndarray) and a.dtype == numpy.float32
            assert a.shape == (len(toks), len(r.source_tokens))
            assert numpy.allclose(a.sum(axis=1), 1.0, atol=1e-4)
    assert nmt.Translator(model).translate_batch(sources[:1])[0].attention is None


def test_score_batch_equals_the_cli(model, sources, tmp_path):
    targets = lines("test.es.gz", 50)
    (tmp_path / "s").write_text("\n".join(sources) + "\n", encoding="utf-8")
    (tmp_path / "t").write_text("\n".join(targets) + "\n", encoding="utf-8")
    want = [float(x) for x in cli("score", "-m", str(model), "--src", str(tmp_path / "s"), "--tgt", str(tmp_path / "t")).split()]
    t = nmt.Translator(model)
    got = t.score_batch(sources, targets)
    assert len(got) == len(want) and all(abs(a - b) < 1e-5 for a, b in zip(got, want))
    per_token = t.score_batch(sources, targets, per_token=True)
    assert all(abs(sum(p) - g) < 1e-4 for p, g in zip(per_token, got))


def test_train_resumes_and_calls_back(tmp_path):
    cfg = write_config(tmp_path, pairs=100, steps=2)
    records = []
    first = nmt.train(cfg, tmp_path / "m", threads=1, progress=False, callback=records.append, overrides={"train.log_every": 1})
    assert first["steps"] == 2 and (tmp_path / "m" / "model.safetensors").exists()
    assert [r["step"] for r in records if "loss" in r] == [1, 2] and any("dev_bleu" in r for r in records)
    second = nmt.train(cfg, tmp_path / "m", threads=1, progress=False, overrides={"train.max_steps": 4, "train.valid_every": 4})
    assert second["steps"] == 4, second
    # model.safetensors is the best by dev BLEU; the checkpoint is where training stopped.
    m = nmt.Model.load(second["checkpoint"])
    assert m.step == 4 and m.languages == ("en", "es") and m.config["arch"] == "rnnsearch"


def test_a_callback_exception_stops_training_and_is_raised(tmp_path):
    cfg = write_config(tmp_path, pairs=100, steps=50)

    def boom(record):
        raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        nmt.train(cfg, tmp_path / "m", threads=1, progress=False, callback=boom, overrides={"train.log_every": 1})


def test_errors_raise_the_named_exceptions(model, tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.safetensors"):
        nmt.Translator(tmp_path / "missing.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(ValueError, match="bad.safetensors"):
        nmt.Translator(bad)
    with pytest.raises(ValueError, match="2 sources but 1 targets"):
        nmt.Translator(model).score_batch(["a", "b"], ["c"])
    cfg = write_config(tmp_path, pairs=20, steps=1)
    with pytest.raises(ValueError, match="no_such_key"):
        nmt.train(cfg, tmp_path / "m1", progress=False, overrides={"train.no_such_key": 1})
    with pytest.raises(ValueError):
        nmt.train(cfg, tmp_path / "m2", progress=False, overrides={"train.max_steps": "many"})
    (tmp_path / "train.es").unlink()
    with pytest.raises(FileNotFoundError, match="train.es"):
        nmt.train(cfg, tmp_path / "m3", progress=False)
    with pytest.raises(ValueError):
        nmt.bleu(["a", "b"], [["a"]])
    with pytest.raises(ValueError):
        nmt.Translator(model, threads=0)
    with pytest.raises(ValueError):
        nmt.Translator(model).translate_batch(["a"], beam_size=0)
    with pytest.raises(TypeError):
        nmt.Translator(model).translate_batch("a string, not a list")


def test_bleu_and_chrf():
    hyps = ["the cat sat on the mat", "a dog"]
    refs = ["the cat sat on the mat", "a dog barked"]
    b = nmt.bleu(hyps, [refs])
    assert b.name == "BLEU" and b.signature == "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"
    assert 0 < float(b) < 100 and str(b).startswith("BLEU = ")
    assert nmt.bleu(hyps, refs).score == b.score
    assert nmt.bleu(refs, [refs]).score == pytest.approx(100.0)
    c = nmt.chrf(hyps, [refs])
    assert c.name == "chrF2" and 0 < c.score < 100


def test_the_gil_is_released_while_translating(model, sources):
    """While one thread is inside `translate_batch`, another runs Python. The worker takes the
    time just before and just after the call, holding the GIL; the main thread, spinning, notes
    the times at which it ran. Had the call kept the GIL, no main-thread time could fall inside
    the call but in its first and last switch interval (5 ms); released, the main thread runs
    through it. Counted in 20 ms bins, not as a wall-clock speed-up of two threads against one
    (which failed on a loaded machine: a timing, not a property). 32 copies of the verses take
    about 0.7 s here, so that a machine several times faster still gives the 4 bins asked."""
    work = sources * 32
    t = nmt.Translator(model, threads=1)
    t.translate_batch(work[:5])
    call = {}

    def run():
        call["start"] = time.perf_counter()
        call["out"] = t.translate_batch(work, beam_size=5)
        call["end"] = time.perf_counter()

    worker = threading.Thread(target=run)
    seen = []
    worker.start()
    while worker.is_alive():
        now = time.perf_counter()
        if not seen or now - seen[-1] > 0.001:  # a time a millisecond: a short list
            seen.append(now)
    worker.join()
    start, end = call["start"], call["end"]
    assert len(call["out"]) == len(work)
    bins = max(1, int((end - start) / 0.02))
    hit = {int((x - start) / (end - start) * bins) for x in seen if start < x < end}
    print(f"call {end - start:.3f} s, main thread ran in {len(hit)} of {bins} 20 ms bins")
    assert bins >= 4, f"the call took {end - start:.3f} s, too short to tell"
    assert len(hit) >= bins / 2, f"the main thread ran in {len(hit)} of {bins} bins of the call: the GIL was held"


@pytest.mark.parametrize("name", ["marian-tiny", "marian-tiny-ln"])
def test_a_converted_marian_model_translates_and_scores_as_marian(name, tmp_path):
    """A Marian model converted by `nmt convert --from marian` (crates/nmt-cli/tests/data: a
    tiny s2s, and its layer-normalised twin) runs from Python as `pymarian` ran it: greedy and
    beam 5 (`--normalize 1`) output line for line, and marian-scorer's sentence scores."""
    data = ROOT / "crates" / "nmt-cli" / "tests" / "data"
    d, vocabs = data / name, data / "marian-tiny"
    model = tmp_path / "converted.safetensors"
    cli("convert", "--from", "marian", str(d / "model.npz"), "--vocabs", str(vocabs / "vocab.en.spm"), str(vocabs / "vocab.es.spm"), "-o", str(model))
    src = (vocabs / "src.en").read_text(encoding="utf-8").splitlines()
    t = nmt.Translator(str(model), threads=1)
    for beam, file in [(1, "greedy.es"), (5, "beam5.es")]:
        got = [r.hypotheses[0] for r in t.translate_batch(src, beam_size=beam, normalize=1.0, no_unk=True)]
        want = (d / file).read_text(encoding="utf-8").splitlines()
        assert sum(a == b for a, b in zip(got, want)) >= 98, (name, file)
    ref = (vocabs / "ref.es").read_text(encoding="utf-8").splitlines()
    theirs = [float(x) for x in (d / "scores.txt").read_text().split()]
    got = t.score_batch(src, ref)
    assert max(abs(a - b) for a, b in zip(got, theirs)) < 2e-4
