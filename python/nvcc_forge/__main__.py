"""python -m nvcc_forge --cmake-dir | --executable"""

import argparse
import sys

from . import cmake_dir, executable


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m nvcc_forge",
                                description="Where the nvcc-forge wheel installed its parts.")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--cmake-dir", action="store_true",
                   help="the directory of NvccForgeConfig.cmake (find_package(NvccForge CONFIG))")
    g.add_argument("--executable", action="store_true", help="the nvcc-forge front end")
    args = p.parse_args(argv)
    try:
        print(cmake_dir() if args.cmake_dir else executable())
    except FileNotFoundError as e:
        print(e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
