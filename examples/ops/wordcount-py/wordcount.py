"""wordcount as a braid script operation (docs/user-ops.md): what
examples/ops/wordcount does, in Python, with nothing to compile.

    braid op add wordcount-py --exec examples/ops/wordcount-py/wordcount.py --interpreter python3 \
        --param lower:bool=false --param 'top:int=0@0..'
    braid worker --allow-exec python3 ...

The unit's input is on stdin, its output goes to stdout, and the
parameters arrive as arguments: --lower=true, --top=N.
"""

import re
import sys
from collections import Counter


def main() -> None:
    args = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    text = sys.stdin.buffer.read().decode("utf-8", "replace")
    if args.get("lower") == "true":
        text = text.lower()
    counts = Counter(re.findall(r"(?:[^\W_]|')+", text))
    words = sorted(counts, key=lambda w: (-counts[w], w))
    top = int(args.get("top", "0"))
    if top > 0:
        words = words[:top]
    sys.stdout.write("".join(f"{counts[w]} {w}\n" for w in words))


if __name__ == "__main__":
    main()
