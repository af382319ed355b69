"""`python -m clnorm devices`: the OpenCL devices and the one a default session takes.

`python -m clnorm version` prints the package's and the library's version."""
import argparse
import sys


def _devices(args):
    import clnorm
    devs = clnorm.devices()
    if not devs:
        print("no OpenCL device found (is an ICD such as pocl-opencl-icd installed?)")
        return 1
    for d in devs:
        mem = d.global_mem_bytes / 2**30
        print(f"{d.spec:>5}  {d.name}  [{d.type}]")
        print(f"       platform {d.platform} ({d.platform_vendor}), vendor {d.vendor}")
        print(f"       {d.version}, driver {d.driver_version}, {d.compute_units} compute "
              f"units, {mem:.1f} GiB")
    if args.no_default:
        return 0
    # The default device is whatever the library's NULL spec picks, CLNORM_DEVICE
    # included, so it is asked rather than worked out again here.
    try:
        s = clnorm.Session()
    except clnorm.Error as e:
        print(f"default device: none ({e})")
        return 1
    print(f"default device: {s.device_name} (CLNORM_DEVICE, else the first GPU, else "
          "the first device)")
    s.close()
    return 0


def _version(args):
    import clnorm
    print(f"clnorm {clnorm.__version__} ({clnorm.library_path})")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m clnorm",
                                description="clnorm's Python package: device listing.")
    sub = p.add_subparsers(dest="command", required=True)
    d = sub.add_parser("devices", help="list the OpenCL devices with their specs (P:D)")
    d.add_argument("--no-default", action="store_true",
                   help="do not open a session to show the default device")
    d.set_defaults(fn=_devices)
    v = sub.add_parser("version", help="the library's version and path")
    v.set_defaults(fn=_version)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
