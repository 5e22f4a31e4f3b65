"""python tools/faultfs MOUNTPOINT --control SOCKET  (or python -m faultfs with tools/ on sys.path)."""
import os
import sys

if __package__ in (None, ""):  # run as `python tools/faultfs`: make `faultfs` importable as a package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from faultfs.fs import main  # noqa: E402

sys.exit(main())
