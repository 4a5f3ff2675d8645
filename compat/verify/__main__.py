# `python -m compat.verify ORIGINAL.py REWRITTEN.py` runs the compat-verify app; --help shows its usage.
from compat.apps.verify import run

if __name__ == "__main__":
    run()
