import json, sys
R = sys.argv[1]
windows = [(750, 1000, 1250), (1250, 1500, 1750), (3250, 3500, 3750), (4750, 5000, 5250)]
res = {}
for n in sys.argv[2:]:
    d = {r['step']: r for r in (json.loads(l) for l in open(f'{R}/{n}/train_log.jsonl')) if 'dev_bleu' in r}
    res[n] = d
    print(n)
    for w in windows:
        if all(s in d for s in w):
            m = sum(d[s]['dev_bleu'] for s in w) / 3
            print(f"  {w}: " + ' / '.join(f"{d[s]['dev_bleu']:.2f}" for s in w) + f" ({m:.2f})  loss " + ' / '.join(f"{d[s]['dev_loss']:.3f}" for s in w) + "  lr " + ' / '.join(str(d[s]['lr']) for s in w))
