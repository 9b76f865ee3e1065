"""WACZ (Web Archive Collection Zipped, Browsertrix's and pywb's package): a zip whose
`archive/` folder holds the WARC files. Each of them is imported as its own source, named
`<file>.wacz#archive/<name>`. A member stored uncompressed (as WACZ writers store them) is read
in place, a window onto the zip, so its records are referred to by their offset in the .wacz
file (`refinery extract` reads them there, no copy); a deflated member is read as a stream and
its page records copied.
"""

from __future__ import annotations

import collections
import io
import struct
import zipfile

SEP = "#"
_ARCHIVES = (".warc", ".warc.gz", ".arc", ".arc.gz")


def is_wacz(path: str) -> bool:
    return path.lower().endswith(".wacz")


def split(source: str) -> tuple[str, str] | None:
    """(zip path, member name) of a `<file>.wacz#<member>` source, else None."""
    zpath, sep, member = source.partition(".wacz" + SEP)
    if not sep or "://" in zpath:
        return None
    return zpath + ".wacz", member


def members(path: str) -> list[str]:
    """The sources of one .wacz file: its archive/ WARC and ARC files, in name order. A zip
    with none, or with two archive members of one name, is one error line naming it."""
    try:
        with zipfile.ZipFile(path) as z:
            names = [i.filename for i in z.infolist() if not i.is_dir()]
    except (zipfile.BadZipFile, OSError) as exc:
        raise ValueError(
            f"{path}: not a readable WACZ (zip) file ({exc}); give its WARCs"
        ) from None
    found = sorted(n for n in names if n.startswith("archive/") and n.lower().endswith(_ARCHIVES))
    counts = collections.Counter(names)
    twice = sorted({n for n in found if counts[n] > 1})
    if twice:  # a member is read by its name: zipfile would give the last of them, quietly
        raise ValueError(
            f"{path}: archive members named more than once: {', '.join(twice[:3])}; which copy "
            "is the archive is ambiguous: repack the WACZ with one member per name (or give its "
            "WARC files themselves)"
        )
    if not found:
        raise ValueError(
            f"{path}: a WACZ without WARC files under archive/ (it holds {len(names)} files)"
        )
    return [f"{path}{SEP}{n}" for n in found]


class Window(io.RawIOBase):
    """Bytes [base, base + size) of a file, as a seekable file of their own."""

    def __init__(self, fh, base: int, size: int):
        self._fh, self.base, self.size = fh, base, size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        start = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        self._pos = max(0, start + offset)
        return self._pos

    def readinto(self, b) -> int:
        n = max(0, min(len(b), self.size - self._pos))
        if not n:
            return 0
        self._fh.seek(self.base + self._pos)
        data = self._fh.read(n)
        b[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()


def open_member(source: str):
    """A stored member: a `Window` onto the .wacz (`.base`: where its bytes begin). A deflated
    member: zipfile's decompressing stream (`.base` None: offsets there are not the file's)."""
    zpath, member = split(source)  # type: ignore[misc]
    z = zipfile.ZipFile(zpath)
    info = z.getinfo(member)
    if info.compress_type != zipfile.ZIP_STORED:
        stream = z.open(info)
        stream.base = None  # type: ignore[attr-defined]
        return stream
    z.close()
    fh = open(zpath, "rb")
    fh.seek(info.header_offset)
    local = fh.read(30)
    if local[:4] != b"PK\x03\x04":
        fh.close()
        raise ValueError(f"{zpath}: {member}: no local file header at {info.header_offset}")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return Window(fh, info.header_offset + 30 + name_len + extra_len, info.file_size)


def stored(source: str) -> bool:
    """Whether a WACZ member is stored uncompressed (readable at an offset of the .wacz)."""
    zpath, member = split(source)  # type: ignore[misc]
    with zipfile.ZipFile(zpath) as z:
        return z.getinfo(member).compress_type == zipfile.ZIP_STORED
