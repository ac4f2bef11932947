"""A PEP 517 build backend for peakscope_hook, standard library only.

setuptools needs the `wheel` package to build a wheel, and a machine without network (or a fresh Debian
one) may lack it; this backend needs nothing, so `pip install ./python` works offline everywhere. It builds
a wheel holding the one module peakscope_hook.py (its version is the module's `__version__`, read from the
text, never imported: importing it would need torch), an sdist, and an editable install (a .pth file).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE = "peakscope_hook"
SDIST_FILES = ("pyproject.toml", "peakscope_build.py", "peakscope_hook.py", "README.md")


def _project():
    """name, description, readme, requires-python from pyproject.toml's [project] (simple `key = "v"` lines)."""
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    fields = dict(re.findall(r'^([\w-]+)\s*=\s*"([^"]*)"\s*$', section.group(1) if section else "", re.M))
    return fields


def _version():
    with open(os.path.join(HERE, MODULE + ".py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError(MODULE + '.py has no __version__ = "X.Y.Z" line')
    return m.group(1)


def _dist_name(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata():
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + p["name"],
        "Version: " + _version(),
        "Summary: " + p.get("description", ""),
    ]
    if "requires-python" in p:
        lines.append("Requires-Python: " + p["requires-python"])
    body = ""
    readme = p.get("readme")
    if readme and os.path.exists(os.path.join(HERE, readme)):
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, readme), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _dist_info():
    return "%s-%s.dist-info" % (_dist_name(_project()["name"]), _version())


def _wheel_name():
    return "%s-%s-py3-none-any.whl" % (_dist_name(_project()["name"]), _version())


def _write_wheel(wheel_directory, files):
    """files: [(path in the wheel, bytes)]; adds WHEEL, METADATA and RECORD."""
    info = _dist_info()
    files = list(files) + [
        (info + "/METADATA", _metadata().encode("utf-8")),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: peakscope_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "/top_level.txt", (MODULE + "\n").encode("utf-8")),
    ]
    record = []
    for path, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
        record.append("%s,sha256=%s,%d" % (path, digest, len(data)))
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode("utf-8")))
    name = _wheel_name()
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            entry = zipfile.ZipInfo(path, date_time=(1980, 1, 1, 0, 0, 0))
            entry.external_attr = 0o644 << 16
            entry.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(entry, data)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    with open(os.path.join(HERE, MODULE + ".py"), "rb") as f:
        return _write_wheel(wheel_directory, [(MODULE + ".py", f.read())])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth line puts this folder on sys.path: edits to peakscope_hook.py show at once.
    return _write_wheel(wheel_directory, [(MODULE + ".pth", (HERE + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (_dist_name(_project()["name"]), _version())
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        members = [(f, open(os.path.join(HERE, f), "rb").read()) for f in SDIST_FILES]
        members.append(("PKG-INFO", _metadata().encode("utf-8")))
        for path, data in members:
            info = tarfile.TarInfo(base + "/" + path)
            info.size = len(data)
            info.mode = 0o644
            info.mtime = int(time.time())
            tar.addfile(info, io.BytesIO(data))
    return name
