# The list pages' latency as a client in a process of its own sees it, beside `braid bench scale`
# (whose own API figures are taken from the bench process, behind the server when it runs at a
# higher priority). Reads the bench's progress lines from LOG (its stderr): once the job is
# submitted, GETs /healthz, /v1/workers?limit=100 and /v1/jobs?limit=100 by turns every 100 ms
# until the job is done, then writes and prints p50 and p99 of each, in ms, to OUT (JSON).
# Usage, at the server's priority:
#   braid bench scale --workers 10000 --units 1000000 2>LOG &
#   nice -n -10 python3 docs/experiments/scale/apiprobe.py LOG OUT
import sys, time, re, urllib.request, json, os
log, out = sys.argv[1], sys.argv[2]
while True:
    t = open(log).read() if os.path.exists(log) else ''
    m = re.search(r'at (http://127\.0\.0\.1:\d+)', t); d = re.search(r'log (/tmp/braid-scale-\d+)', t)
    if m and d and 'submitted' in t: break
    time.sleep(0.2)
url = m.group(1); tok = open(d.group(1) + '/data/admin.token').read().strip()
paths = ['/healthz', '/v1/workers?limit=100', '/v1/jobs?limit=100']
lat = {p: [] for p in paths}
i = 0
while 'units/s' not in open(log).read().split('submitted')[-1]:
    p = paths[i % 3]; i += 1
    req = urllib.request.Request(url + p, headers={'Authorization': 'Bearer ' + tok})
    s = time.monotonic()
    try:
        urllib.request.urlopen(req, timeout=10).read(); lat[p].append((time.monotonic() - s) * 1000)
    except Exception:
        pass
    time.sleep(0.1)
res = {}
for p, l in lat.items():
    l.sort(); q = lambda x: round(l[min(len(l) - 1, int(x * len(l)))], 1) if l else None
    res[p] = {'n': len(l), 'p50': q(0.5), 'p99': q(0.99)}
json.dump(res, open(out, 'w')); print(res)
