"""Make an interpreter that sees the fake torch_tpu in site/ besides everything this one sees.

    python mkpython.py DEST     # prints DEST/bin/python

DEST gets a virtual-environment layout: pyvenv.cfg, bin/python (a symlink to this interpreter's
real binary) and lib/pythonX.Y/site-packages, whose scanner-fake-tpu.pth adds this interpreter's
site-packages (through site.addsitedir, so their own .pth files run too) and puts site/ before them
all: the project's environment has Google's real torch_tpu, and the fake must be the one found
(``import torch_tpu``, and importlib.metadata's entry points and version, which keep the first
distribution of a name on sys.path). The Go runner
starts the harness with ``python -I``, which ignores PYTHONPATH and the user site but still reads
pyvenv.cfg and .pth files, so this is how a test shows a distribution to the real runner. Used by
internal/probe's fake-torch_tpu tests and the harness's tests/test_tpu_load.py.
"""

import os
import sys
import sysconfig

FAKE_SITE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "site")


def make(dest: str) -> str:
    real = os.path.realpath(sys.executable)
    ver = f"python{sys.version_info[0]}.{sys.version_info[1]}"
    site_dir = os.path.join(dest, "lib", ver, "site-packages")
    os.makedirs(site_dir, exist_ok=True)
    os.makedirs(os.path.join(dest, "bin"), exist_ok=True)
    with open(os.path.join(dest, "pyvenv.cfg"), "w", encoding="utf-8") as fh:
        fh.write(f"home = {os.path.dirname(real)}\ninclude-system-site-packages = false\n"
                 f"version = {sys.version.split()[0]}\n")
    paths = sysconfig.get_paths()
    dirs = dict.fromkeys([paths["purelib"], paths["platlib"]])
    with open(os.path.join(site_dir, "scanner-fake-tpu.pth"), "w", encoding="utf-8") as fh:
        fh.write("import site, sys; " + "; ".join(f"site.addsitedir({d!r})" for d in dirs)
                 + f"; sys.path.insert(0, {FAKE_SITE!r})\n")
    python = os.path.join(dest, "bin", "python")
    if not os.path.lexists(python):
        os.symlink(real, python)
    return python


if __name__ == "__main__":
    print(make(sys.argv[1]))
