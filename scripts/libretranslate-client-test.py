"""LibreTranslate's published Python client (`libretranslatepy`, from PyPI, unchanged) against
`nmt serve`: the client fills its language menus from `languages()`, translates and detects.

usage: scripts/libretranslate-client-test.py [--nmt BIN] [--model PATH]

The model (default: a few updates of rnnsearch-small on the bundled corpus, trained here) is
served by its file alone, with no `en-es=` name: its languages come from the model file, which
took them from the training files' names (train.en.gz, train.es.gz). Then the same server with
`--api-keys`: the client without a key is refused (403), with one it works. Prints one line per
check and `N passed, N failed`; exits non-zero on a failure.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

from libretranslatepy import LibreTranslateAPI

SENTENCE = "In the beginning God created the heavens and the earth."
results = []


def check(name, ok, detail=""):
    results.append(bool(ok))
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + str(detail) if detail and not ok else ''}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiny_model(nmt, workdir):
    subprocess.run([nmt, "train", "-c", "configs/rnnsearch-small.toml", "-m", workdir, "--quiet", "--threads", "2",
                    "--set", "train.max_steps=30", "--set", "train.valid_every=1000", "--set", "train.valid_bleu_sentences=20",
                    "--set", "train.max_minutes=0",
                    "--set", "model.hidden_dim=64", "--set", "model.emb_dim=32", "--set", "model.maxout_dim=32",
                    "--set", "model.att_dim=32"], check=True)
    return os.path.join(workdir, "model.safetensors")


def serve(nmt, model, extra=()):
    port = free_port()
    proc = subprocess.Popen([nmt, "serve", "-m", model, "--port", str(port), "--threads", "1", *extra],
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "health", timeout=1).read()
            return proc, url
        except OSError:
            if proc.poll() is not None:
                sys.exit(f"nmt serve exited: {proc.stderr.read()}")
            time.sleep(0.1)
    proc.kill()
    sys.exit("nmt serve did not answer within 30 s")


def stop(proc):
    proc.terminate()
    proc.wait(timeout=30)
    return proc.stderr.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nmt", default="target/release/nmt")
    ap.add_argument("--model")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = a.model or tiny_model(a.nmt, os.path.join(tmp, "model"))
        want = subprocess.run([a.nmt, "translate", "-m", model, "--threads", "1"], input=SENTENCE + "\n",
                              capture_output=True, text=True, check=True).stdout.rstrip("\n")

        proc, url = serve(a.nmt, model)
        lt = LibreTranslateAPI(url)
        langs = lt.languages()
        check("languages() lists English -> Spanish",
              {"code": "en", "name": "English", "targets": ["es"]} in langs, langs)
        check("languages() lists Spanish", any(l["code"] == "es" and l["name"] == "Spanish" for l in langs), langs)
        out = lt.translate(SENTENCE, "en", "es")
        check("translate() gives nmt translate's output", out == want, f"{out!r} != {want!r}")
        check("translate() with source auto", lt.translate(SENTENCE, "auto", "es") == want)
        det = lt.detect(SENTENCE)
        check("detect() names English", det == [{"confidence": 100.0, "language": "en"}], det)
        log = stop(proc)
        check("the server names the languages at start", "English → Spanish" in log, log)

        keys = os.path.join(tmp, "keys.txt")
        with open(keys, "w") as f:
            f.write("# one key, 100 requests a minute\nsecret 100\n")
        proc, url = serve(a.nmt, model, ["--api-keys", keys])
        try:
            LibreTranslateAPI(url).translate(SENTENCE, "en", "es")
            check("without a key: 403", False, "no error")
        except urllib.error.HTTPError as e:
            check("without a key: 403", e.code == 403, e.code)
        keyed = LibreTranslateAPI(url, api_key="secret")
        check("with the key: translate()", keyed.translate(SENTENCE, "en", "es") == want)
        check("with the key: languages() and detect()", keyed.languages() == langs and keyed.detect(SENTENCE) == det)
        stop(proc)
    passed = sum(results)
    print(f"libretranslatepy: {passed} passed, {len(results) - passed} failed")
    sys.exit(0 if passed == len(results) else 1)


if __name__ == "__main__":
    main()
