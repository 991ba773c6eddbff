"""The table and the picture of scripts/curves-vs-peers.sh: dev BLEU at every validation of each
system, against updates and target tokens seen (and wall minutes with --minutes).

usage: python scripts/curves-report.py WORK NMT IMG [--minutes]

Reads each arm's directory WORK/ARM (what is there; arms not yet started are left out):
- nmt: ARM/train_log.jsonl. dev_bleu is `nmt eval`'s scorer inside training (greedy, first 300
  dev verses: curves-vs-peers.sh sets both). Its log has target tokens per second per log line,
  not counts: tokens = tok_per_s × the line's seconds (since the previous line, less the
  validations between them), summed.
- Marian: ARM/valid/STEP.hyp (its greedy output at each validation) scored here by
  `NMT eval bleu`; tokens seen and minutes from ARM/train.log's display lines (displayed at every
  validation: "Up. U : ... after TOKENS : Time SECONDSs", the time since the previous display).
- JoeyNMT: ARM/valid/STEP.hyp scored here; tokens and seconds from ARM/curve.tsv
  (scripts/joeynmt/train_updates.py).
Writes WORK/curves.tsv (one row per system and validation), WORK/curves.md (a markdown table) and
IMG (.svg or .png).
"""
import json
import re
import subprocess
import sys
from pathlib import Path

WORK, NMT, IMG = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
MINUTES = "--minutes" in sys.argv[4:]
REF = WORK / "data" / "dev300.es"

# arm -> label; what each was given (its batch option) is WORK/ARM.given, from curves-vs-peers.sh
ARMS = {
    "marian": "Marian s2s",
    "marian-defaults": "Marian s2s defaults",
    "joey-defaults": "JoeyNMT defaults",
    "joey-recipe": "JoeyNMT recipe",
    "nmt-small": "nmt rnnsearch-small",
    "nmt-s2s": "nmt rnnsearch-s2s",
}


def bleu(hyp):
    out = subprocess.run([NMT, "eval", "bleu", "--json", "-r", str(REF), str(hyp)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["score"]


def scored(d):
    """{step: BLEU} of d/valid/STEP.hyp, scored by one scorer."""
    return {int(p.stem): bleu(p) for p in (d / "valid").glob("*.hyp")}


def nmt_points(d):
    rows = [json.loads(line) for line in open(d / "train_log.jsonl")]
    points, tokens, prev, valid_s = [], 0.0, 0.0, 0.0
    for r in rows:
        if "dev_bleu" in r:
            points.append((r["step"], tokens, r["elapsed_s"] / 60, r["dev_bleu"]))
            valid_s += r.get("valid_s", 0.0)
        elif "tok_per_s" in r:
            tokens += r["tok_per_s"] * max(0.0, r["elapsed_s"] - prev - valid_s)
            prev, valid_s = r["elapsed_s"], 0.0
    return points


def marian_points(d):
    disp = re.compile(r"Up\. (\d+) : .* after ([\d,]+) : Time ([\d.]+)s")
    seen, secs, at = {}, 0.0, {}
    for line in open(d / "train.log", encoding="utf-8"):
        m = disp.search(line)
        if m:
            secs += float(m.group(3))
            at[int(m.group(1))] = (int(m.group(2).replace(",", "")), secs / 60)
    for step, b in scored(d).items():
        if step in at:
            seen[step] = (step, *at[step], b)
    return [seen[s] for s in sorted(seen)]


def joey_points(d):
    at = {}
    for line in open(d / "curve.tsv", encoding="utf-8"):
        step, tokens, secs = line.split("\t")
        at[int(step)] = (int(tokens), float(secs) / 60)
    return [(s, *at[s], b) for s, b in sorted(scored(d).items()) if s in at]


def points(arm):
    d = WORK / arm
    if arm.startswith("nmt"):
        return nmt_points(d) if (d / "train_log.jsonl").exists() else []
    if arm.startswith("marian"):
        return marian_points(d) if (d / "train.log").exists() else []
    return joey_points(d) if (d / "curve.tsv").exists() else []


curves = {a: sorted(points(a)) for a in ARMS}
curves = {a: c for a, c in curves.items() if c}
with open(WORK / "curves.tsv", "w", encoding="utf-8") as f:
    f.write("system\tupdate\ttarget_tokens_seen\tminutes\tdev_bleu\n")
    for a, c in curves.items():
        for step, tokens, minutes, b in c:
            f.write(f"{a}\t{step}\t{tokens:.0f}\t{minutes:.2f}\t{b:.2f}\n")

steps = sorted({p[0] for c in curves.values() for p in c})
lines = [
    "| system | given | target tokens / update (measured) | " + " | ".join(str(s) for s in steps)
    + " | tokens seen at the last | wall minutes at the last |",
    "|---|---|---|" + "---|" * len(steps) + "---|---|",
]
for a, c in curves.items():
    by = {p[0]: p for p in c}
    last = c[-1]
    given = WORK / f"{a}.given"
    given = given.read_text(encoding="utf-8").strip() if given.exists() else ""
    lines.append(
        f"| {ARMS[a]} | {given} | {last[1] / last[0]:.0f} | "
        + " | ".join(f"{by[s][3]:.2f}" if s in by else "–" for s in steps)
        + f" | {last[1]:.0f} | {last[2]:.1f} |"
    )
(WORK / "curves.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
print("\n".join(lines))

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

axes_of = [(0, "updates"), (1, "target tokens seen")] + ([(2, "wall minutes")] if MINUTES else [])
fig, axes = plt.subplots(1, len(axes_of), figsize=(5.5 * len(axes_of), 4.2), squeeze=False)
for i, name in axes_of:
    ax = axes[0][i]
    for a, c in curves.items():
        ax.plot([p[i] for p in c], [p[3] for p in c], marker="o", markersize=3, label=ARMS[a])
    ax.set_xlabel(name)
    ax.set_ylabel("dev BLEU (greedy, first 300 verses)")
    ax.grid(alpha=0.3)
axes[0][0].legend(fontsize=8)
fig.suptitle("Bible en→es, emb 256, bi-GRU 256, decoder 256, 8 000 subwords; one scorer (nmt eval bleu)",
             fontsize=9)
fig.tight_layout()
fig.savefig(IMG)
print(f"wrote {WORK / 'curves.tsv'}, {WORK / 'curves.md'} and {IMG}")
