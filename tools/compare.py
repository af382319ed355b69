#!/usr/bin/env python3
"""Runs the bench grid with clnorm and its peers on the same hardware, in one run,
and writes a table of GB/s and ratios (Markdown), the JSON of every number and a PNG
plot. Stopped by SIGTERM (a time limit), it writes what it has measured so far.

Peers: PyTorch eager (CUDA when --torch-device cuda, else CPU), the same PyTorch
functions through torch.compile (--torch-compile), numpy (CPU), the scalar C loop
and memcpy (`clnorm bench --impl scalar|memcpy`). Every peer is optional: a missing
package is reported and skipped. Nothing here is needed to build or test clnorm.

  tools/compare.py --clnorm build/tools/clnorm --device nvidia --torch-device cuda --torch-compile
  tools/compare.py --clnorm build/tools/clnorm --device pocl --quick --numpy --scalar

--op attention runs `clnorm bench --op attention` and PyTorch's
scaled_dot_product_attention on its grid instead (tools/compare_attention.py):

  tools/compare.py --op attention --clnorm build/tools/clnorm --device nvidia --torch-device cuda
"""
import argparse, json, os, signal, subprocess, sys, time

import compare_attention

GRID = [("softmax", 4096, 128, 1), ("softmax", 16384, 1024, 0), ("softmax", 4096, 4096, 1),
        ("softmax", 1024, 32768, 0), ("softmax", 64, 128256, 1), ("softmax", 8, 262144, 1),
        ("softmax", 1, 1048576, 1), ("softmax", 32768, 8192, 0), ("softmax", 128, 151936, 0),
        ("rmsnorm", 1, 4096, 1), ("rmsnorm", 64, 8192, 1), ("rmsnorm", 4096, 4096, 1),
        ("rmsnorm", 16384, 8192, 0), ("rmsnorm", 8192, 16384, 0), ("rmsnorm", 65536, 1024, 1)]
ES = {"f32": 4, "f16": 2, "bf16": 2}


def op_bytes(op, rows, cols, es):
    n = rows * cols * es
    return 2 * n + (cols * es if op == "rmsnorm" else 0)


def run_clnorm(exe, args, env=None):
    p = subprocess.run([exe, "bench", "--json", "-"] + args, capture_output=True, text=True, env=env)
    if p.returncode:
        sys.exit(f"{exe} bench {' '.join(args)}: exit {p.returncode}\n{p.stderr}")
    return json.loads(p.stdout[p.stdout.index('{"impl"'):])


class Interrupted(Exception):
    """SIGTERM (a time limit ran out): write the table of what was measured so far."""


def on_sigterm(signum, frame):
    raise Interrupted()


def rotation(nbytes, gpu):
    """Inputs rotated per call, so that together they exceed the last-level cache as
    `clnorm bench` rotates its own (512 MB on GPUs, 64 MB on CPUs): every
    implementation reads its input from memory, none from a warm cache."""
    total = (512 << 20) if gpu else (64 << 20)
    return max(2, min(4096, -(-total // nbytes)))


def bench_torch(dev, dtype, quick, repeats, batch, compiled, res):
    """PyTorch's softmax and RMSNorm on the grid, eager or through torch.compile;
    appends a result per shape to res as it goes."""
    import torch
    import torch.nn.functional as F
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[dtype]
    for op, rows, cols, q in GRID:
        if quick and not q:
            continue
        nbytes = rows * cols * ES[dtype]
        nin = rotation(nbytes, dev == "cuda")
        xs = [(torch.rand(rows, cols, device=dev) * 8 - 4 + (torch.arange(rows, device=dev) % 7)[:, None]).to(tdt)
              for _ in range(nin)]
        w = torch.rand(cols, device=dev).to(tdt)
        def f(x):
            if op == "softmax":
                return torch.softmax(x, dim=-1)
            if hasattr(F, "rms_norm"):
                return F.rms_norm(x, (cols,), w, 1e-6)
            return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6).to(tdt) * w
        if compiled and not hasattr(torch, "compile"):
            print(f"torch.compile skipped: PyTorch {torch.__version__} has none", file=sys.stderr)
            return
        if compiled:
            # One compilation per shape, static shapes: dynamo's recompile limit per
            # function would otherwise send later shapes back to eager unannounced.
            torch._dynamo.reset()
            f = torch.compile(f, dynamic=False)
            try:
                f(xs[0])
            except Exception as e:  # a backend missing on this machine (a compiler, Triton)
                print(f"torch.compile {op} {dtype} {rows}x{cols} skipped: {e}", file=sys.stderr)
                continue
        f(xs[0])
        times = []
        for i in range(repeats):
            # A batch of calls back to back, as clnorm bench --batch times them.
            batch_x = [xs[(i * batch + b) % nin] for b in range(batch)]
            if dev == "cuda":
                s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda.synchronize(); s.record()
                for x in batch_x:
                    f(x)
                e.record(); torch.cuda.synchronize()
                times.append(s.elapsed_time(e) * 1e-3 / batch)
            else:
                t0 = time.perf_counter()
                for x in batch_x:
                    f(x)
                times.append((time.perf_counter() - t0) / batch)
        times.sort()
        t = times[len(times) // 2]
        res.append({"op": op, "dtype": dtype, "rows": rows, "cols": cols, "ms": t * 1e3,
                    "gbps": op_bytes(op, rows, cols, ES[dtype]) / t * 1e-9})


def bench_numpy(quick, repeats):
    import numpy as np
    res = []
    rng = np.random.default_rng(1)
    for op, rows, cols, q in GRID:
        if quick and not q:
            continue
        xs = [rng.random((rows, cols), dtype=np.float32) * 8 - 4
              for _ in range(rotation(rows * cols * 4, False))]
        w = rng.random(cols, dtype=np.float32)
        def f(x):
            if op == "softmax":
                e = np.exp(x - x.max(axis=-1, keepdims=True))
                return e / e.sum(axis=-1, keepdims=True)
            return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + 1e-6) * w
        f(xs[0])
        times = []
        for i in range(repeats):
            x = xs[(i + 1) % len(xs)]
            t0 = time.perf_counter(); f(x); times.append(time.perf_counter() - t0)
        times.sort()
        t = times[len(times) // 2]
        res.append({"op": op, "dtype": "f32", "rows": rows, "cols": cols, "ms": t * 1e3,
                    "gbps": op_bytes(op, rows, cols, 4) / t * 1e-9})
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clnorm", default="build/tools/clnorm")
    ap.add_argument("--device", action="append", default=[], help="clnorm device spec (repeatable)")
    ap.add_argument("--torch-device", choices=["cuda", "cpu", "none"], default="none")
    ap.add_argument("--torch-compile", action="store_true",
                    help="also PyTorch through torch.compile (default mode), on --torch-device")
    ap.add_argument("--op", choices=["norm", "attention"], default="norm",
                    help="norm: softmax and RMSNorm (default); attention: decode attention against SDPA")
    ap.add_argument("--dtype", help="f32, f16, bf16 or a comma list (default f32; f32,bf16 for attention)")
    ap.add_argument("--batch-size", help="attention: batch sizes, a comma list (clnorm bench's default grid)")
    ap.add_argument("--kv-len", help="attention: KV lengths, a comma list, 1k = 1024")
    ap.add_argument("--q-len", type=int, help="attention: queries per head (default 1)")
    ap.add_argument("--prefill", action="store_true", help="attention: as many queries as keys")
    ap.add_argument("--layout", default="bhtd", help="attention: bhtd, bthd or all")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--numpy", action="store_true")
    ap.add_argument("--scalar", action="store_true", help="also the scalar C loop and memcpy")
    ap.add_argument("--repeats", type=int, default=0)
    ap.add_argument("--batch", type=int, default=1,
                    help="calls timed back to back per repeat, the same for every implementation")
    ap.add_argument("--out", default="compare", help="prefix of the .md, .json and .png written")
    a = ap.parse_args()
    dtypes = (a.dtype or ("f32,bf16" if a.op == "attention" else "f32")).split(",")
    rep = a.repeats or (20 if a.torch_device == "cuda" else 5)
    impls, copy, notes, versions = {}, {}, {}, []
    env = dict(os.environ, RUSTICL_ENABLE=os.environ.get("RUSTICL_ENABLE", "llvmpipe"))
    signal.signal(signal.SIGTERM, on_sigterm)
    interrupted = False
    try:
        if a.op == "attention":
            compare_attention.measure(a, dtypes, rep, env, run_clnorm, impls, copy, notes, versions)
        else:
            measure(a, dtypes, rep, env, impls, copy, notes, versions)
    except Interrupted:
        print("interrupted: the table holds what was measured before", file=sys.stderr)
        interrupted = True
    if a.op == "attention":
        compare_attention.write_outputs(a, impls, copy, notes, versions, interrupted, json)
    else:
        write_outputs(a, impls, copy, notes, versions, interrupted)


def measure(a, dtypes, rep, env, impls, copy, notes, versions):
    """Runs clnorm and each peer asked for, filling impls, copy, notes and versions."""
    for spec in a.device or [None]:
        for dt in dtypes:
            args = ["--dtype", dt, "--repeats", str(rep), "--batch", str(a.batch)] + (["--quick"] if a.quick else [])
            if spec:
                args += ["--device", spec]
            print("clnorm", spec or "default", dt, file=sys.stderr, flush=True)
            j = run_clnorm(a.clnorm, args, env)
            name = "clnorm " + j["device"]
            impls.setdefault(name, []).extend(j["results"])
            copy[name] = j["copy_gbps"]
            if j.get("note"):
                notes[name] = j["note"]
    if a.scalar:
        for impl in ("scalar", "memcpy"):
            j = run_clnorm(a.clnorm, ["--impl", impl, "--repeats", "3"] + (["--quick"] if a.quick else []), env)
            impls[impl] = j["results"]
    if a.torch_device != "none":
        try:
            import torch
            where = torch.cuda.get_device_name() if a.torch_device == "cuda" else f"{torch.get_num_threads()} threads"
            versions.append(f"PyTorch {torch.__version__} ({a.torch_device}, {where})")
            for dt in dtypes:
                bench_torch(a.torch_device, dt, a.quick, rep, a.batch, False,
                            impls.setdefault("torch " + a.torch_device, []))
            if a.torch_compile:
                for dt in dtypes:
                    bench_torch(a.torch_device, dt, a.quick, rep, a.batch, True,
                                impls.setdefault("torch.compile " + a.torch_device, []))
        except ImportError as e:
            print("torch skipped:", e, file=sys.stderr)
    if a.numpy:
        try:
            import numpy
            versions.append(f"numpy {numpy.__version__}")
            impls["numpy"] = bench_numpy(a.quick, 3)
        except ImportError as e:
            print("numpy skipped:", e, file=sys.stderr)


def write_outputs(a, impls, copy, notes, versions, interrupted):
    """The Markdown table (also printed), the JSON of every number and the PNG plot."""
    impls = {n: rs for n, rs in impls.items() if rs}
    if not impls:
        sys.exit("nothing was measured")
    copy = {n: c for n, c in copy.items() if n in impls}
    keys = sorted({(r["op"], r["dtype"], r["rows"], r["cols"]) for rs in impls.values() for r in rs},
                  key=lambda k: (k[0], k[1], k[2] * k[3], k[3]))
    table = {name: {(r["op"], r["dtype"], r["rows"], r["cols"]): r for r in rs} for name, rs in impls.items()}
    names = list(impls)
    # Each clnorm device's share of its 1 GB copy and of a copy of the shape's own bytes
    # (small shapes cannot reach the former: a kernel's ramp-up and drain).
    pct = [f"{n} % of copy" for n in copy] + [f"{n} % of copy at size" for n in copy]
    lines = ["| op | dtype | shape | " + " | ".join(f"{n} GB/s" for n in names) + " | " +
             " | ".join([f"{names[0]} / {n}" for n in names[1:]] + pct) + " |",
             "|" + "---|" * (3 + 2 * len(names) - 1 + len(pct))]
    for k in keys:
        base = table[names[0]].get(k)
        cells = [f"{table[n][k]['gbps']:.1f}" if k in table[n] else "" for n in names]
        ratios = [f"{base['gbps'] / table[n][k]['gbps']:.2f}x" if base and k in table[n] else ""
                  for n in names[1:]]
        shares = [f"{100 * table[n][k]['gbps'] / c:.0f} %" if k in table[n] and c else ""
                  for n, c in copy.items()]
        shares += [f"{100 * table[n][k]['gbps'] / table[n][k]['copy_size_gbps']:.0f} %"
                   if k in table[n] and table[n][k].get("copy_size_gbps") else "" for n in copy]
        lines.append(f"| {k[0]} | {k[1]} | {k[2]}x{k[3]} | " + " | ".join(cells + ratios + shares) + " |")
    for n, c in copy.items():
        lines.append(f"\n{n}: device buffer copy {c:.1f} GB/s (read + write)")
        if n in notes:
            lines.append(f"{n}: {notes[n]}")
    if versions:
        lines.append("\npeers: " + ", ".join(versions))
    if interrupted:
        lines.append("\nInterrupted before the end: shapes or peers may be missing.")
    md = "\n".join(lines) + "\n"
    print(md)
    with open(a.out + ".md", "w") as f:
        f.write(md)
    with open(a.out + ".json", "w") as f:
        json.dump({"impls": impls, "copy_gbps": copy, "peers": versions,
                   "interrupted": interrupted}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(max(8, len(keys) * 0.7), 5))
        width = 0.8 / len(names)
        for i, n in enumerate(names):
            ax.bar([j + i * width for j in range(len(keys))],
                   [table[n][k]["gbps"] if k in table[n] else 0 for k in keys], width, label=n)
        for n, c in copy.items():
            ax.axhline(c, linestyle="--", linewidth=1, color="gray")
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(keys))])
        ax.set_xticklabels([f"{k[0]}\n{k[1]} {k[2]}x{k[3]}" for k in keys], rotation=60, fontsize=7)
        ax.set_ylabel("GB/s (read + write)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(a.out + ".png", dpi=110)
    except ImportError as e:
        print("plot skipped:", e, file=sys.stderr)


if __name__ == "__main__":
    main()
