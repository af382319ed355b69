"""The attention half of tools/compare.py (--op attention): `clnorm bench --op
attention` and PyTorch's scaled_dot_product_attention on the same grid, in one run.

PyTorch gets the shapes clnorm measured, laid out alike ([b][h][t][d], or [b][t][h][d]
as a transposed view), random values in (-1, 1), key/value heads shared through
enable_gqa (repeat_interleave of K and V before timing where PyTorch has no
enable_gqa, which then reads more bytes than counted), and the same causal rule: the
queries are the last q_len tokens. On CUDA it is timed with its own choice of backend
and with each backend forced through torch.nn.attention.sdpa_kernel, and the fastest
is reported; on CPU with its default. Timing: CUDA events (the wall clock on CPU)
around `batch` calls back to back, median of the repeats after a warm-up call per
input set, inputs rotated past the caches as clnorm rotates its own.
"""
import contextlib, sys, time

BACKENDS = ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH")


def clnorm_args(a, dtypes, rep):
    """The `clnorm bench --op attention` options that select the grid."""
    args = ["--op", "attention", "--dtype", ",".join(dtypes), "--repeats", str(rep),
            "--batch", str(a.batch), "--layout", a.layout]
    for opt, val in (("--batch-size", a.batch_size), ("--kv-len", a.kv_len), ("--q-len", a.q_len)):
        if val:
            args += [opt, str(val)]
    return args + (["--prefill"] if a.prefill else []) + (["--quick"] if a.quick else [])


def gb(x):
    return f"{x:,.0f}" if x >= 100 else f"{x:.1f}" if x >= 1 else f"{x:.2f}"


def key(r):
    return (r["dtype"], r["layout"], r["batch"], r["kv_len"], r["q_len"])


def set_count(set_bytes, gpu, free):
    """Input sets rotated per call: past 512 MB on GPUs, 64 MB on CPUs, within half
    of the free memory, as clnorm bench rotates its own."""
    total = (512 << 20) if gpu else (64 << 20)
    n = min(16, total // set_bytes + 1)
    while n > 1 and n * set_bytes > free // 2:
        n -= 1
    return n


def bench_torch(dev, shapes, repeats, batch, res):
    """SDPA on each of clnorm's measured shapes; appends a result per shape to res."""
    import torch
    import torch.nn.functional as F
    tdt = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
    cuda = dev == "cuda"
    try:
        from torch.nn.attention import sdpa_kernel, SDPBackend
        forced = [b for b in BACKENDS if hasattr(SDPBackend, b)] if cuda else []
    except ImportError:
        forced = []
    for sh in shapes:
        dt, b, kvl, ql, d = sh["dtype"], sh["batch"], sh["kv_len"], sh["q_len"], sh["head_dim"]
        qh, kvh = sh["q_heads"], sh["kv_heads"]
        es = 4 if dt == "f32" else 2
        set_bytes = (2 * b * kvh * kvl + b * qh * ql) * d * es
        free = torch.cuda.mem_get_info()[0] if cuda else 16 << 30
        if set_bytes > 0.75 * free:
            print(f"torch attention {key(sh)} skipped: {set_bytes / 1e9:.1f} GB of inputs", file=sys.stderr)
            continue

        def make(heads, length):
            shape = (b, heads, length, d) if sh["layout"] == "bhtd" else (b, length, heads, d)
            t = torch.empty(shape, dtype=tdt[dt], device=dev).uniform_(-1, 1)
            return t if sh["layout"] == "bhtd" else t.transpose(1, 2)

        sets = [(make(qh, ql), make(kvh, kvl), make(kvh, kvl))
                for _ in range(set_count(set_bytes, cuda, free))]
        # Causal with the queries as the last q_len tokens: query t sees keys up to
        # t + kv_len - q_len. PyTorch's is_causal aligns the mask top-left, which is the
        # same only where q_len == kv_len; one query sees every key.
        mask, causal = None, ql == kvl and ql > 1
        if 1 < ql < kvl:
            mask = torch.ones(ql, kvl, dtype=torch.bool, device=dev).tril(kvl - ql)
        gqa = True

        def f(q, k, v):
            nonlocal gqa
            if gqa:
                try:
                    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                                          enable_gqa=qh != kvh)
                except TypeError:  # PyTorch before 2.5: no enable_gqa
                    gqa = False
            return F.scaled_dot_product_attention(q, k.repeat_interleave(qh // kvh, 1),
                                                  v.repeat_interleave(qh // kvh, 1),
                                                  attn_mask=mask, is_causal=causal)

        times = {}
        for backend in ["default"] + forced:
            ctx = sdpa_kernel(getattr(SDPBackend, backend)) if backend != "default" else contextlib.nullcontext()
            try:
                with ctx:
                    times[backend] = time_calls(torch, f, sets, cuda, repeats, batch)
            except RuntimeError as e:  # not supported for this dtype or shape, or out of memory
                msg = str(e).strip().splitlines()[0][:100] if str(e).strip() else type(e).__name__
                print(f"torch {backend} {key(sh)}: {msg}", file=sys.stderr)
        del sets
        if cuda:
            torch.cuda.empty_cache()
        if not times:
            continue
        best = min(times, key=times.get)
        t = times[best]
        res.append(dict({k: sh[k] for k in ("dtype", "layout", "batch", "q_heads", "kv_heads", "q_len",
                                             "kv_len", "head_dim", "bytes")},
                        op="attention", ms=t * 1e3, gbps=sh["bytes"] / t * 1e-9, backend=best,
                        gqa=gqa, backends={n: sh["bytes"] / s * 1e-9 for n, s in times.items()}))


def time_calls(torch, f, sets, cuda, repeats, batch):
    """Median seconds per call of `batch` calls back to back, after a warm-up per set."""
    for s in sets:
        f(*s)
    if cuda:
        torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        calls = [sets[(i * batch + c) % len(sets)] for c in range(batch)]
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            for x in calls:
                f(*x)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e) * 1e-3 / batch)
        else:
            t0 = time.perf_counter()
            for x in calls:
                f(*x)
            times.append((time.perf_counter() - t0) / batch)
    times.sort()
    return times[len(times) // 2]


def measure(a, dtypes, rep, env, run_clnorm, impls, copy, notes, versions):
    """clnorm on each device asked for, then PyTorch on the first one's shapes."""
    shapes = None
    for spec in a.device or [None]:
        args = clnorm_args(a, dtypes, rep) + (["--device", spec] if spec else [])
        print("clnorm attention", spec or "default", file=sys.stderr, flush=True)
        j = run_clnorm(a.clnorm, args, env)
        name = "clnorm " + j["device"]
        impls[name] = j["results"]
        copy[name] = j["copy_gbps"]
        if j.get("note"):
            notes[name] = j["note"]
        if shapes is None:
            shapes = [r for r in j["results"] if not r["skipped"]]
    if a.torch_device == "none" or not shapes:
        return
    try:
        import torch
    except ImportError as e:
        print("torch skipped:", e, file=sys.stderr)
        return
    where = torch.cuda.get_device_name() if a.torch_device == "cuda" else f"{torch.get_num_threads()} threads"
    versions.append(f"PyTorch {torch.__version__} ({a.torch_device}, {where}), "
                    "scaled_dot_product_attention")
    bench_torch(a.torch_device, shapes, rep, a.batch, impls.setdefault("torch " + a.torch_device, []))


def write_outputs(a, impls, copy, notes, versions, interrupted, json):
    """The Markdown table (also printed) and the JSON of every number."""
    names = [n for n in impls if n.startswith("clnorm ")]
    peers = [n for n in impls if not n.startswith("clnorm ")]
    if not names:
        sys.exit("nothing was measured")
    rows = {}
    for n in names + peers:
        for r in impls[n]:
            rows.setdefault(key(r), {})[n] = r
    head = (["dtype", "layout", "batch", "kv_len", "q_len"] + [f"{n} GB/s" for n in names] +
            [f"{p} GB/s" for p in peers] + [f"{p} backend" for p in peers if p.endswith("cuda")] +
            [f"{names[0]} / {p}" for p in peers] + [f"{n} % of copy at size" for n in names] +
            [f"{p} % of copy at size" for p in peers] + [f"{n} % of copy" for n in names])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for k in sorted(rows, key=lambda k: (k[0], k[1], k[4], k[2], k[3])):
        got = rows[k]
        base, size_copy = got.get(names[0]), (got.get(names[0]) or {}).get("copy_size_gbps", 0)
        ok = {n: r for n, r in got.items() if not r.get("skipped")}
        cells = [gb(ok[n]["gbps"]) if n in ok else (f"skipped: {got[n]['skipped']}" if n in got else "")
                 for n in names]
        cells += [gb(ok[p]["gbps"]) if p in ok else "" for p in peers]
        cells += [ok[p]["backend"].lower() if p in ok else "" for p in peers if p.endswith("cuda")]
        cells += [f"{base['gbps'] / ok[p]['gbps']:.2f}x" if names[0] in ok and p in ok else "" for p in peers]
        cells += [f"{100 * ok[n]['gbps'] / ok[n]['copy_size_gbps']:.0f} %"
                  if n in ok and ok[n].get("copy_size_gbps") else "" for n in names]
        cells += [f"{100 * ok[p]['gbps'] / size_copy:.0f} %" if p in ok and size_copy else "" for p in peers]
        cells += [f"{100 * ok[n]['gbps'] / copy[n]:.0f} %" if n in ok and copy.get(n) else "" for n in names]
        lines.append("| " + " | ".join([k[0], k[1], str(k[2]), str(k[3]), str(k[4])] + cells) + " |")
    for n, c in copy.items():
        lines.append(f"\n{n}: device buffer copy {c:.1f} GB/s (read + write)")
        if n in notes:
            lines.append(f"{n}: {notes[n]}")
    lines.append("\nGB/s: K and V read, q read, out written, per call. % of copy at size: of "
                 f"{names[0]}'s copy of the shape's K and V bytes, same run.")
    if versions:
        lines.append("peers: " + ", ".join(versions))
    if interrupted:
        lines.append("\nInterrupted before the end: shapes or peers may be missing.")
    md = "\n".join(lines) + "\n"
    print(md)
    with open(a.out + ".md", "w") as f:
        f.write(md)
    with open(a.out + ".json", "w") as f:
        json.dump({"impls": impls, "copy_gbps": copy, "peers": versions,
                   "interrupted": interrupted}, f, indent=1)
