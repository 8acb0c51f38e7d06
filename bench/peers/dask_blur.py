#!/usr/bin/env python3
"""The paper's workload on Dask distributed, the peer of `braid bench paper`.

Each unit is a Gaussian blur (sigma 2) of the whole GIF, decoded from and
encoded back to GIF bytes as braid's units are. A LocalCluster of 2 worker
processes x 2 threads on loopback runs the units; the metric is the paper's:
(time the last result is back - time the job was submitted) / units.
Pillow's GaussianBlur approximates the Gaussian with box blurs, so its output
differs numerically from braid's; the cost per unit is what is compared.

    pip install -r bench/peers/requirements.txt
    python3 bench/peers/dask_blur.py --image small.gif --out dask.json
"""
import argparse
import io
import json
import platform
import statistics
import sys
import time

from dask.distributed import Client, LocalCluster, wait
from PIL import Image, ImageFilter

UNITS = [1, 5, 10, 20, 50, 100, 200, 500]


def blur(data: bytes, i: int) -> bytes:
    """One unit: decode, blur with sigma 2, encode as GIF."""
    img = Image.open(io.BytesIO(data)).convert("RGBA")
    out = img.filter(ImageFilter.GaussianBlur(2))
    buf = io.BytesIO()
    out.convert("RGB").convert("P", palette=Image.Palette.ADAPTIVE).save(buf, format="GIF")
    return buf.getvalue()


def job(client: Client, data_future, units: int) -> float:
    """Runs one job of `units` units; returns its makespan in ms."""
    t0 = time.perf_counter()
    futures = [client.submit(blur, data_future, i, pure=False) for i in range(units)]
    wait(futures)
    makespan = (time.perf_counter() - t0) * 1000
    for f in futures:
        if f.status != "finished":
            raise RuntimeError(f"unit failed: {f.exception()}")
    return makespan


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--image", required=True)
    ap.add_argument("--units", default=",".join(map(str, UNITS)))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="dask.json")
    args = ap.parse_args()
    units = [int(u) for u in args.units.split(",")]
    data = open(args.image, "rb").read()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                           host="127.0.0.1", dashboard_address=None)
    client = Client(cluster)
    try:
        data_future = client.scatter(data, broadcast=True)
        job(client, data_future, 10)  # warm-up, as braid's lines have
        runs = []
        for run in range(1, args.runs + 1):
            for n in units:
                ms = job(client, data_future, n)
                runs.append({"units": n, "run": run, "makespan_ms": ms, "avg_unit_ms": ms / n})
    finally:
        client.close()
        cluster.close()
    label = f"dask distributed {args.workers} procs × {args.threads} threads"
    result = {"label": label, "python": platform.python_version(), "runs": runs,
              "versions": {"dask": __import__("dask").__version__, "pillow": Image.__version__}}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=2)
    with open(args.out.rsplit(".", 1)[0] + ".csv", "w") as f:
        f.write("units,run,avg_unit_ms,makespan_ms\n")
        for r in runs:
            f.write(f"{r['units']},{r['run']},{r['avg_unit_ms']:.3f},{r['makespan_ms']:.3f}\n")
    for n in units:
        med = statistics.median(r["avg_unit_ms"] for r in runs if r["units"] == n)
        print(f"{label}: {n} units: median {med:.2f} ms/unit", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
