#!/usr/bin/env python3
"""Reads runs/run*.json (eight `braid bench net` invocations, five jobs per
setting each) and restart/ab.json, and prints what README.md quotes: each
setting's first and warm jobs at both points, how often sctp's median of a
grid's jobs comes within 0.9x of the best setting's when jobs are drawn from
these (bootstrap), and the restart A/B. Run from this directory."""
import collections
import glob
import json
import random
import statistics as st

data = collections.defaultdict(lambda: collections.defaultdict(lambda: ([], [])))
for f in sorted(glob.glob('runs/run*.json')):
    for r in json.load(open(f))['results']:
        first, warm = data[r['rtt_ms']][r['setting']]
        (first if r['run'] == 0 else warm).append(r['units_per_sec'])

random.seed(1)
for rtt in sorted(data):
    print(f'== {rtt:g} ms, clean, 19 KiB units: {len(data[rtt]["sctp"][0])} first jobs and '
          f'{len(data[rtt]["sctp"][1])} warm jobs per setting (units/s)')
    for s, (f, w) in data[rtt].items():
        ws = sorted(w)
        print(f'  {s:7s} first median {st.median(f):4.0f}   warm median {st.median(w):4.0f}  '
              f'p10 {ws[len(ws) // 10]:4.0f}  min {ws[0]:4.0f}')
    for nwarm in (2, 4, 6, 9):
        ok, n = 0, 20000
        for _ in range(n):
            med = {s: st.median([random.choice(f)] + [random.choice(w) for _ in range(nwarm)])
                   for s, (f, w) in data[rtt].items()}
            ok += med['sctp'] >= 0.9 * max(med.values())
        print(f'  a grid point of 1 first + {nwarm} warm jobs per setting: sctp within 0.9x of the best '
              f'in {ok / n:.2f} of draws')

ab = json.load(open('restart/ab.json'))
print('== restart A/B: sctp only, 8 invocations of --runs 5 per build and RTT')
for rtt in (100, 50):
    for b, name in (('base', 'head'), ('rs', 'restart')):
        rs = [r for r in ab[b] if r['rtt_ms'] == rtt]
        f = [r['units_per_sec'] for r in rs if r['run'] == 0]
        w = sorted(r['units_per_sec'] for r in rs if r['run'] > 0)
        print(f'  {rtt} ms {name:7s} first median {st.median(f):4.0f}   warm median {st.median(w):4.0f}  '
              f'p10 {w[len(w) // 10]:4.0f}  min {w[0]:4.0f}  mean {st.mean(w):4.0f}')
