#!/usr/bin/env python3
"""Writes the hand-made seed inputs of the clnorm fuzz targets into fuzz/corpus/<target>/
(seed-*). Each encoder mirrors its target's decoder (fuzz_common.c and the target), so
a seed reaches the interesting code at once: valid environment settings, valid
tuning lines under a valid file, checksummed disk-cache images, valid device calls.
The corpus also holds what the long fuzzing runs added (minimised with -merge=1).

    python3 fuzz/make_seeds.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(bytes(data))


def u8(v):
    return bytes([v & 0xFF])


def u16(v):
    return struct.pack("<H", v & 0xFFFF)


def u32(v):
    return struct.pack("<I", v & 0xFFFFFFFF)


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def size(v):
    """fz_size: 0..63 in one byte, else 0x40 + 16-bit (up to 8191), else raw."""
    if v < 64:
        return u8(v)
    if v < 8192:
        return u8(0x40) + u16(v)
    return u8(0xC0) + u64(v)


def string(s):
    b = s.encode()
    return u8(len(b)) + b


def env(value):
    """fz_env: a selector byte (low bits 0: unset), then the string."""
    if value is None:
        return u8(0)
    return u8(1) + string(value)


def profile(kind="cpu", wg_idx=6, local_idx=5, vec_shift=3, path=0, loop=0, pocl=3, cus=2):
    """fz_profile: type, compute units, max_wg, local memory, pref multiple, vec, path,
    loop limit, PoCL major."""
    t = {"cpu": 0, "gpu": 1, "acc": 2, "all": 3}[kind]
    return (u8(t) + u8(cus - 1) + u8(wg_idx) + u8(local_idx) + u8(3) + u8(vec_shift) +
            u8(path) + u8(loop) + u8(pocl))


ENV_VARS = ["CLNORM_REDUCTION", "CLNORM_VARIANT", "CLNORM_WORK_GROUP", "CLNORM_ROW_THREADS",
            "CLNORM_SPLIT", "CLNORM_MAX_WORK_GROUP", "CLNORM_MAX_LOCAL_MEM"]


def env_plan():
    cases = [
        ("auto", {}, profile(), 0, 0, 64, 4096),
        ("gpu-split", {}, profile("gpu", 6, 6, 0, 2, 0, 0, 66), 2, 0, 2, 300000),
        ("forced-stream", {"CLNORM_VARIANT": "stream", "CLNORM_WORK_GROUP": "12",
                           "CLNORM_ROW_THREADS": "4"}, profile(), 1, 1, 7, 37),
        ("forced-split", {"CLNORM_VARIANT": "split", "CLNORM_SPLIT": "3",
                          "CLNORM_WORK_GROUP": "8"}, profile(), 3, 2, 2, 100),
        ("forced-reg", {"CLNORM_VARIANT": "reg", "CLNORM_REDUCTION": "local"}, profile("gpu"),
         5, 0, 9, 900),
        ("subgroup-missing", {"CLNORM_REDUCTION": "subgroup"}, profile(path=0), 2, 0, 4, 64),
        ("subgroup", {"CLNORM_REDUCTION": "subgroup"}, profile("gpu", path=1), 2, 0, 4, 64),
        ("limits", {"CLNORM_MAX_WORK_GROUP": "64", "CLNORM_MAX_LOCAL_MEM": "1024"},
         profile("gpu", 7, 8), 4, 0, 1000, 8191),
        ("llvmpipe", {}, profile("cpu", 6, 5, 3, 0, 150), 0, 0, 3, 1000000),
        ("bad-number", {"CLNORM_WORK_GROUP": "-3"}, profile(), 0, 0, 3, 10),
        ("bad-word", {"CLNORM_VARIANT": "fast"}, profile(), 0, 0, 3, 10),
    ]
    for name, e, prof, op, dt, rows, cols in cases:
        data = b"".join(env(e.get(v)) for v in ENV_VARS)
        data += prof + u8(op) + u8(dt) + size(rows) + size(cols)
        data += env("/tmp/clnorm-cache") + env(None) + env("/root") + u8(100)
        write("fuzz_env_plan", name, data)


def device_spec():
    for s in ["pocl", "PoCL", "cpu", "gpu", "0:0", "0:1", "1:0", "00:000", "0:", ":0", "",
              "llvmpipe", "portable", "pthread", "x" * 201, "nvidia", "0:1000001", "cpu "]:
        name = "".join(c if c.isalnum() else "_" for c in s)[:20] or "empty"
        write("fuzz_device_spec", name, s.encode())


def fnv(data, seed=0):
    h = 1469598103934665603 ^ seed
    for b in data:
        h ^= b
        h = (h * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def disk_image(key, payload, fmt=1):
    hdr = b"CLNORM\x1a\n" + u32(fmt) + u32(len(key)) + u64(len(payload))
    s = fnv(payload, fnv(key, fnv(hdr, 0)))
    return hdr + u64(s) + key + payload


def diskcache():
    key = b"clnorm program\nformat 1\n"
    cases = [
        ("valid", 0, key, disk_image(key, b"\x7fELF binary")),
        ("other-key", 0, b"another key", disk_image(key, b"payload")),
        ("fix-all", 0x0F, key, b"\0" * 32 + key + b"payload"),
        ("roundtrip", 0x10, key, disk_image(key, b"x" * 40)),
        ("bad-sum", 0, key, disk_image(key, b"payload")[:24] + u64(1) + key + b"payload"),
        ("short", 0x03, key, b"CLNORM\x1a\n" + u32(1)),
        ("empty-payload", 0x07, key, disk_image(key, b"")),
        ("nul-in-key", 0, key, disk_image(b"clnorm program\0\ndevice 1\n", b"payload")),
    ]
    for name, flags, k, img in cases:
        write("fuzz_diskcache", name, u8(flags) + u8(len(k)) + k + img)


TUNE_LINES = [
    "# op dtype cols rows algo variant path wg team slices best_us builtin_us",
    "rmsnorm f32 4096 64 rmsnorm stream local 64 8 0 12.5 14.0",
    "softmax-auto f32 1024 512 softmax-3pass reg local 256 32 0 3.1 3.3",
    "softmax-online bf16 262144 2 softmax-online split local 256 256 16 80.0 95.5",
    "softmax-stats f16 128 4096 softmax-stats stream local 64 4 0 1.0 1.2",
    "add-rmsnorm f32 8192 16 add-rmsnorm reg local 512 512 0 7.0 7.5",
]


def tuning():
    base = profile("gpu", 6, 6, 0, 0, 0, 0, 8)
    cases = [
        ("table", base, 0, 0, 64, 4096, "\n".join(TUNE_LINES) + "\n"),
        ("auto", base, 5, 0, 512, 1024, "\n".join(TUNE_LINES[:3])),
        ("split", base, 2, 2, 2, 262144, TUNE_LINES[3] + "\n"),
        ("cpu", profile(), 3, 1, 4096, 128, TUNE_LINES[4] + "\n"),
        ("foreign-algo", base, 0, 0, 64, 4096,
         "rmsnorm f32 4096 64 softmax-3pass stream local 64 8 0 1.0 1.0\n"),
        ("bad-line", base, 0, 0, 64, 4096, "rmsnorm f32 4096 64 rmsnorm stream\n"),
    ]
    for name, prof, op, dt, rows, cols, text in cases:
        data = prof + u8(op) + u8(dt) + size(rows) + size(cols) + text.encode()
        write("fuzz_tuning", name, data)


def validate():
    def device(fn, dt, rows, cols, sizes, x, y, res, gamma, rmax, rsum, eps=0, algo=0,
               update=0, waits=0, queue=1, event=1, forced=0):
        d = u8(fn) + u8(forced)
        for bit, idx in ((1, 7), (2, 3), (4, 2), (8, 2)):  # wg 16, team 4, split, 3 slices
            if forced & bit:
                d += u8(idx)
        d += u8(dt) + size(rows) + size(cols)
        d += b"".join(u16(s - 4) for s in sizes)  # buffer sizes (4 + value)
        d += u8(0) + u8(0)  # sub-buffer slot and trim
        for ch, off, ld in (x, y, res):
            d += u8(ch) + size(off) + size(ld)
        d += u8(gamma) + u8(rmax) + u8(rsum) + u32(eps) + u8(1 if eps else 0)
        d += u8(algo) + u8(update) + u8(waits) + u8(queue) + u8(event)
        return d

    sizes = [4096] * 6
    write("fuzz_validate", "rmsnorm", device(0, 0, 4, 64, sizes, (0, 0, 0), (1, 0, 0),
                                              (2, 0, 0), 3, 4, 5))
    write("fuzz_validate", "rmsnorm-inplace-views", device(0, 1, 5, 30, sizes, (0, 3, 40),
                                                           (192, 0, 0), (2, 0, 0), 8, 4, 5))
    write("fuzz_validate", "add", device(1, 2, 3, 100, sizes, (0, 1, 0), (1, 2, 101),
                                          (2, 0, 0), 3, 4, 5, update=1))
    write("fuzz_validate", "softmax", device(2, 0, 6, 50, sizes, (0, 0, 0), (1, 0, 0),
                                              (2, 0, 0), 8, 4, 5, algo=2))
    write("fuzz_validate", "stats", device(3, 0, 7, 33, sizes, (0, 0, 0), (1, 0, 0),
                                            (2, 0, 0), 8, 4, 5))
    write("fuzz_validate", "overlap", device(2, 0, 4, 8, sizes, (0, 0, 10), (0, 5, 10),
                                              (2, 0, 0), 8, 4, 5))
    write("fuzz_validate", "oob", device(0, 0, 1000, 64, sizes, (0, 0, 0), (1, 0, 0),
                                          (2, 0, 0), 8, 4, 5))
    write("fuzz_validate", "split-forced", device(2, 0, 2, 300, sizes, (0, 0, 0), (1, 0, 0),
                                                   (2, 0, 0), 8, 4, 5, forced=0x0C) )
    # host forms: fn, dtype, rows, cols, nulls, algo, eps bits, eps flag
    write("fuzz_validate", "host-softmax", u8(5) + u8(0) + size(4) + size(33) + u8(0) + u8(0)
          + u32(0) + u8(0))
    write("fuzz_validate", "host-overflow", u8(4) + u8(0) + size(2**62) + size(2**62) + u8(0)
          + u8(0) + u32(0) + u8(0))
    # One row of exactly 64 KiB, the largest handed over, with gamma: 16-bit.
    write("fuzz_validate", "host-rmsnorm-64k-row", u8(4) + u8(1) + size(1) + size(32768) + u8(0)
          + u8(0) + u32(0) + u8(0))
    write("fuzz_validate", "host-add", u8(7) + u8(1) + size(3) + size(20) + u8(64) + u8(0)
          + u32(0) + u8(0))


if __name__ == "__main__":
    env_plan()
    device_spec()
    diskcache()
    tuning()
    validate()
