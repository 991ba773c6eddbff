#!/usr/bin/env python3
"""The browser test of `nmt serve`'s page (issue "nmt serve"), in headless Chromium driven by
WebDriver (chromedriver): standard library only.

    scripts/browser-test.py [--model PATH] [--nmt BIN] [--screenshot FILE.png]

It starts `nmt serve` on a free loopback port (with --model, that model; otherwise it trains a
tiny model for a few updates on the bundled corpus, enough for a page to show), loads the page,
types a sentence, clicks Translate, and checks that:
- a translation appears;
- the attention heatmap has one row per output token and one column per source token, as the
  JSON API reports them for the same request;
- hovering an output row highlights it.
It saves a desktop screenshot (FILE.png) and a phone-width one (FILE-phone.png), then stops
the server with SIGTERM and checks it exits cleanly. Exit status 0 on success.
"""
import argparse
import base64
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

SENTENCE = "And God saw the light, that it was good."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body=None, timeout=60):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return json.loads(r.read() or b"null")
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{method} {url}: {e.code} {e.read().decode(errors='replace')}") from None


def wait_until(what, fn, timeout=60.0):
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            v = fn()
            if v:
                return v
        except (RuntimeError, OSError):
            pass
        time.sleep(0.25)
    raise RuntimeError(f"timed out waiting for {what}")


class Driver:
    """The few WebDriver commands the test needs."""

    def __init__(self, port: int):
        self.base = f"http://127.0.0.1:{port}"
        caps = {
            "capabilities": {
                "alwaysMatch": {
                    "browserName": "chrome",
                    "goog:chromeOptions": {
                        "binary": "/usr/bin/chromium",
                        "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,1000"],
                    },
                }
            }
        }
        self.sid = http("POST", f"{self.base}/session", caps)["value"]["sessionId"]
        self.s = f"{self.base}/session/{self.sid}"

    def go(self, url):
        http("POST", f"{self.s}/url", {"url": url})

    def find(self, css):
        v = http("POST", f"{self.s}/element", {"using": "css selector", "value": css})["value"]
        return next(iter(v.values()))

    def script(self, js, *args):
        return http("POST", f"{self.s}/execute/sync", {"script": js, "args": list(args)})["value"]

    def click(self, el):
        http("POST", f"{self.s}/element/{el}/click", {})

    def clear(self, el):
        http("POST", f"{self.s}/element/{el}/clear", {})

    def type(self, el, text):
        http("POST", f"{self.s}/element/{el}/value", {"text": text})

    def hover(self, el):
        origin = {"element-6066-11e4-a52e-4f735466cecf": el}
        actions = {"actions": [{"type": "pointer", "id": "mouse", "parameters": {"pointerType": "mouse"},
                                "actions": [{"type": "pointerMove", "duration": 0, "origin": origin, "x": 0, "y": 0}]}]}
        http("POST", f"{self.s}/actions", actions)

    def window(self, width, height):
        http("POST", f"{self.s}/window/rect", {"width": width, "height": height})

    def screenshot(self, path):
        png = base64.b64decode(http("GET", f"{self.s}/screenshot")["value"])
        with open(path, "wb") as f:
            f.write(png)
        return len(png)

    def quit(self):
        http("DELETE", self.s)


def tiny_model(nmt: str, workdir: str) -> str:
    """A few updates of rnnsearch-small on the bundled corpus: the page needs a model, not a
    good one."""
    subprocess.run([nmt, "train", "-c", "configs/rnnsearch-small.toml", "-m", workdir, "--quiet", "--set", "train.max_steps=20",
                    "--set", "train.valid_every=0", "--set", "model.hidden_dim=64", "--set", "model.emb_dim=32",
                    "--set", "model.maxout_dim=32", "--set", "model.att_dim=32"], check=True)
    return os.path.join(workdir, "model.safetensors")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--nmt", default="target/release/nmt")
    ap.add_argument("--screenshot", default="runs/browser/serve.png")
    a = ap.parse_args()
    os.makedirs(os.path.dirname(a.screenshot) or ".", exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="nmt-browser-")
    model = a.model or tiny_model(a.nmt, os.path.join(tmp, "model"))
    port, dport = free_port(), free_port()
    server = subprocess.Popen([a.nmt, "serve", "-m", f"en-es={model}", "--port", str(port), "--threads", "1"], stderr=subprocess.PIPE, text=True)
    driver_proc = subprocess.Popen(["chromedriver", f"--port={dport}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    drv = None
    try:
        wait_until("the server", lambda: http("GET", f"{url}/health")["status"] == "ok")
        wait_until("chromedriver", lambda: http("GET", f"http://127.0.0.1:{dport}/status")["value"]["ready"])
        expect = http("POST", f"{url}/api/v1/translate", {"text": [SENTENCE], "beam_size": 5, "n_best": 3, "alignments": True})
        hyp = expect["translations"][0]["hypotheses"][0]
        rows, cols = len(hyp["target_tokens"]), len(expect["translations"][0]["source_tokens"])
        drv = Driver(dport)
        drv.go(url + "/")
        wait_until("the model list", lambda: drv.script("return document.querySelectorAll('#model option').length") > 0)
        box = drv.find("#src")
        drv.clear(box)
        drv.type(box, SENTENCE)
        drv.script("document.getElementById('beam').value = 5; document.getElementById('nbest').value = 3;")
        drv.click(drv.find("#go"))
        text = wait_until("a translation", lambda: drv.script("const e = document.getElementById('translation-0'); return e && e.textContent"))
        assert text == hyp["text"], f"page shows {text!r}, the API {hyp['text']!r}"
        got = drv.script("""const t = document.getElementById('heatmap-0');
            return t && [t.querySelectorAll('tr.target').length, t.querySelectorAll('th.source-col').length]""")
        assert got == [rows, cols], f"heatmap {got}, want {[rows, cols]} (rows × columns)"
        nbest = drv.script("return document.querySelectorAll('ol.nbest li').length")
        drv.hover(drv.find("#heatmap-0 tr.target"))
        active = drv.script("return document.querySelectorAll('#heatmap-0 tr.active').length")
        assert active == 1, f"hovering a row lit {active} rows"
        size = drv.screenshot(a.screenshot)
        drv.window(390, 844)
        wide = drv.script("return document.documentElement.scrollWidth <= window.innerWidth + 1")
        phone = a.screenshot.replace(".png", "-phone.png")
        drv.screenshot(phone)
        assert wide, "the page is wider than a phone screen (the heatmap should scroll inside its box)"
        print(f"ok: translation {text!r}; heatmap {rows} × {cols}; {nbest} hypotheses; hover lights its row; "
              f"screenshots {a.screenshot} ({size} bytes) and {phone}; no horizontal scrolling at 390 px")
    finally:
        if drv:
            try:
                drv.quit()
            except RuntimeError:
                pass
        driver_proc.terminate()
        server.send_signal(signal.SIGTERM)
        try:
            err = server.communicate(timeout=30)[1]
        except subprocess.TimeoutExpired:
            server.kill()
            raise
    if server.returncode != 0 or "stopped" not in err:
        print(f"the server did not stop cleanly (exit {server.returncode}): {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
