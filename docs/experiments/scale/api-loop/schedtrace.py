#!/usr/bin/env python3
"""Where a Go process's goroutines wait to run, from a runtime trace.

Usage: go tool trace -d=parsed trace.out | schedtrace.py

For every wait from runnable to running it charges the wait to the goroutine,
named by the first frame outside the runtime, net, sync and io of the stack
it last blocked in (its TransitionStack), and to whoever made it runnable (the
event's Stack; none: the network poller or the scheduler). It prints the
share of the total wait of each, with counts and quantiles, and the running
time by the same names.
"""
import collections
import re
import sys

HDR = re.compile(r'^M=\S+ P=\S+ G=(\S+) StateTransition Time=(\d+) GoID=(\d+) (\w+)->(\w+)')
SKIP = ('internal/poll', 'net.', 'sync.', 'time.', 'internal/sync', 'context.', 'bufio', 'io.', 'crypto/')


def name(frames):
    for f in frames:
        if f.startswith('runtime.') or f.startswith(SKIP) or 'runtime_pollWait' in f:
            continue
        return f.split(' @')[0]
    return '?'


cls = {}
runnable = {}
started = {}
delay = collections.defaultdict(int)
waits = collections.defaultdict(list)
by_waker = collections.defaultdict(int)
running = collections.defaultdict(int)


def take(ev, stack, tstack):
    _, t, gid, a, b = ev
    if tstack:
        cls[gid] = name(tstack)
    if b == 'Runnable':
        waker = 'preempted or yielded' if a == 'Running' else (name(stack) if stack else 'network poller / scheduler')
        runnable[gid] = (t, waker)
    if b == 'Running':
        started[gid] = t
    if a == 'Running' and gid in started:
        running[cls.get(gid, '?')] += t - started.pop(gid)
    if a == 'Runnable' and b == 'Running' and gid in runnable:
        t0, waker = runnable.pop(gid)
        c = cls.get(gid, '?')
        delay[c] += t - t0
        waits[c].append(t - t0)
        by_waker[waker] += t - t0


ev, stack, tstack, mode = None, [], [], 's'
for line in sys.stdin:
    line = line.rstrip('\n')
    if line.startswith('\t'):
        if ev and not line.startswith('\t\t'):
            (stack if mode == 's' else tstack).append(line.lstrip('\t'))
        continue
    if line.startswith('Stack='):
        mode = 's'
        continue
    if line.startswith('TransitionStack='):
        mode = 't'
        continue
    if ev:
        take(ev, stack, tstack)
    ev, stack, tstack, mode = None, [], [], 's'
    m = HDR.match(line)
    if m:
        ev = (m.group(1), int(m.group(2)), m.group(3), m.group(4), m.group(5))
if ev:
    take(ev, stack, tstack)

total = sum(delay.values()) or 1
print('total wait to run: %.1f s' % (total / 1e9))
print('by the goroutine waiting (where it last blocked): share, waits, mean, p50/p90/p99 ms')
for c, d in sorted(delay.items(), key=lambda x: -x[1])[:10]:
    w = sorted(waits[c])
    n = len(w)
    print('  %5.1f%%  %7d  %6.2f  %6.2f %6.2f %6.2f  %s' % (100 * d / total, n, d / n / 1e6,
          w[n // 2] / 1e6, w[int(n * .9)] / 1e6, w[int(n * .99)] / 1e6, c))
print('by what made it runnable:')
for c, d in sorted(by_waker.items(), key=lambda x: -x[1])[:8]:
    print('  %5.1f%%  %s' % (100 * d / total, c))
rt = sum(running.values()) or 1
print('running time %.2f s, by where each run ended (a block, a system call, a preemption):' % (rt / 1e9))
for c, d in sorted(running.items(), key=lambda x: -x[1])[:10]:
    print('  %5.1f%%  %s' % (100 * d / rt, c))
