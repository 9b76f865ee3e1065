"""Where an archive's bytes come from: a local path (a `.wacz` member: a window onto the zip),
an fsspec URL (`remote_fs`: only the schemes of `STORE_SCHEMES`, http(s) through the crawler's
SSRF guard, every hop; an object store needs its optional package, s3fs for s3://, else one
line names it: `MissingStore`), and the streams that decompress a whole file as it is read (one
gzip stream, zstd with or without a dictionary)."""

from __future__ import annotations

import contextlib
import functools
import io
import zlib
from typing import Any, BinaryIO

from crawlers.imports import wacz

READ = 1 << 16


def is_remote(path: str) -> bool:
    """An fsspec URL (s3://, gs://, http://...) rather than a local path (file:// is local)."""
    return "://" in path and not path.startswith("file://")


def local_path(path: str) -> str:
    """The local file a source is read from (a WACZ member's: the .wacz)."""
    path = path[len("file://") :] if path.startswith("file://") else path
    member = wacz.split(path)
    return member[0] if member else path


class RemoteRefused(ValueError):
    """An http(s) archive whose host is (or resolves to, on any redirect hop) an address the
    SSRF guard refuses, or a URL whose scheme the guard cannot watch (`check_scheme`)."""


HTTP_SCHEMES = ("http", "https")
# Object stores, reached through their own SDKs at the endpoints the operator configured (the
# URL names a bucket or repository, never a host), and fsspec's in-process memory filesystem.
STORE_SCHEMES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss", "hf", "memory")


def check_scheme(url: str, allow_private: bool = False) -> str:
    """The URL's scheme, lowercase, when an import may read it; else RemoteRefused (one line
    naming the input, the scheme and the fix).

    Read: http(s) (every connection and redirect hop through the SSRF guard) and the object
    stores of `STORE_SCHEMES`. Any other fsspec scheme (ftp, sftp, smb, webhdfs, ...) and any
    chained URL (`simplecache::...`, `zip://...::...`) opens connections of its own, with its
    own name resolution, redirects (webhdfs's data nodes) and side channels (FTP's PASV), that
    no check before connecting can bound: refused whatever `allow_private` says (kept for
    callers: the allowance lifts loopback and private networks inside the guard, and a
    connection past the guard could reach the link-local metadata services it never lifts)."""
    scheme = url.split("://", 1)[0].strip().lower()
    if scheme in HTTP_SCHEMES:  # http(s): read whole, never un-chained
        return scheme
    if "::" in url:
        reason = "a chained fsspec URL ('::') opens its inner URL past the address guard"
    elif scheme in STORE_SCHEMES:
        return scheme
    else:
        reason = f"scheme {scheme!r} connects past the address guard"
    stores = ", ".join(f"{s}://" for s in STORE_SCHEMES if s != "memory")
    raise RemoteRefused(
        f"{url[:300]}: {reason}; give a local path, an http(s):// URL or an object store URL "
        f"({stores}), copying the file there first (--allow-private-networks does not lift "
        "this)"
    )


def remote_fs(url: str, allow_private: bool = False) -> tuple[Any, str]:
    """(fsspec filesystem, path) of a URL whose scheme an import reads (`check_scheme`). http(s)
    goes through a session whose every connection, each redirect hop included, is checked by
    the crawler's SSRF guard. A glob is not expanded here (`list_remote` does that)."""
    from fsspec.core import url_to_fs

    if check_scheme(url, allow_private) in HTTP_SCHEMES:
        from fsspec.implementations.http import HTTPFileSystem

        client = functools.partial(_guarded_client, allow_private)
        return HTTPFileSystem(get_client=client, skip_instance_cache=True), url
    try:
        fs, path = url_to_fs(url)
    except ImportError:  # fsspec's "Install s3fs to access S3": the store's package is missing
        raise MissingStore(_missing_store(url)) from None
    return fs, path


class MissingStore(ValueError):
    """An object store URL whose fsspec implementation (an optional extra) is not installed."""


# The package fsspec reads each object store with: an optional extra, not installed by default.
STORE_PACKAGES = {
    "s3": "s3fs",
    "s3a": "s3fs",
    "gs": "gcsfs",
    "gcs": "gcsfs",
    "az": "adlfs",
    "abfs": "adlfs",
    "abfss": "adlfs",
    "hf": "huggingface_hub",
}


def _missing_store(url: str) -> str:
    """One line: the URL, the package its scheme needs, and the fix."""
    scheme = url.split("://", 1)[0].strip().lower()
    package = STORE_PACKAGES.get(scheme, f"the fsspec implementation of {scheme}://")
    return (
        f"{url[:300]}: reading {scheme}:// needs the optional package {package}, which is not "
        f"installed; install it (pip install {package}) or copy the files to a local path"
    )


def list_remote(pattern: str, allow_private: bool = False) -> list[str]:
    """The files an fsspec URL names, as URLs: itself, or a glob's matches (a `*` in it) that
    are not directories. Every listing request goes through `remote_fs` (http(s): the guard)."""
    fs, path = remote_fs(pattern, allow_private)
    found = [path]
    if "*" in path:  # fsspec's own rule: `?` and `[` are common in URLs
        with _unmasked(pattern):
            found = [p for p in sorted(fs.glob(path)) if not fs.isdir(p)]
    proto = pattern.split("://", 1)[0]
    return [p if "://" in p else f"{proto}://{p}" for p in found]


async def _guarded_client(allow_private: bool, **kwargs: Any):
    import aiohttp

    from crawlers.crawl.ssrf import BlockedAddressError, check_addresses

    class Guarded(aiohttp.TCPConnector):
        async def _resolve_host(self, host, port, *args, **kw):  # every hop, literals too
            try:
                results = await super()._resolve_host(host, port, *args, **kw)
            except aiohttp.InvalidUrlClientError:  # aiohttp: "is not a canonical IPv4 address"
                raise RemoteRefused(_not_canonical(host)) from None
            try:
                check_addresses(host, [r["host"] for r in results], allow_private)
            except BlockedAddressError as exc:
                raise RemoteRefused(str(exc)) from None
            return results

    return aiohttp.ClientSession(connector=Guarded(), **kwargs)


def _not_canonical(host: str) -> str:
    """Why a host spelling is refused (aiohttp connects to no IPv4 address written other than
    as four decimal numbers: 2130706433, 0x7f000001, 0177.0.0.1, 127.1, a trailing dot), and
    the fix: the address written canonically, where it is one."""
    import ipaddress
    import socket

    why = f"host {host!r} is not a canonical IPv4 address, so it is refused (aiohttp reads no "
    try:
        fix = f"write it as {ipaddress.IPv4Address(socket.inet_aton(host.rstrip('.')))}"
    except (OSError, ValueError):
        fix = "write the host as four decimal numbers (127.0.0.1) or as a name"
    return why + f"numeric, octal, hexadecimal or shortened spelling, nor a trailing dot); {fix}"


def remote_info(url: str, allow_private: bool = False) -> dict[str, Any]:
    """fsspec's info of a URL (size, mtime or ETag), a refusal by the guard raised as such
    (fsspec's HTTP filesystem reports every failure as FileNotFoundError)."""
    fs, path = remote_fs(url, allow_private)
    with _unmasked(url):
        return fs.info(path)


@contextlib.contextmanager
def _unmasked(url: str):
    try:
        yield
    except Exception as exc:
        cause: BaseException | None = exc
        while cause is not None and not isinstance(cause, RemoteRefused):
            cause = cause.__cause__ or cause.__context__
        if cause is not None:
            raise RemoteRefused(f"{url}: {cause}") from None
        raise


def can_seek(fh: BinaryIO) -> bool:
    """Whether `fh` really seeks: fsspec's streaming HTTP file (a server that answers no byte
    ranges) says seekable() and raises on any move."""
    try:
        if not fh.seekable():
            return False
        here = fh.tell()
        fh.seek(here + 1)
        fh.seek(here)
        return True
    except (ValueError, OSError):
        return False


def open_source(path: str, allow_private: bool = False) -> BinaryIO:
    """The file's bytes: a local file, or an fsspec URL opened for reading (seekable where the
    server answers byte ranges)."""
    if is_remote(path):
        fs, rpath = remote_fs(path, allow_private)
        with _unmasked(path):
            return fs.open(rpath, "rb")
    if wacz.split(path):
        return wacz.open_member(path)
    return open(local_path(path), "rb")


class Cut(ValueError):
    """A compressed stream that ends inside a member or frame (not EOFError: warcio takes that
    for the end of the file and would end the scan quietly)."""


class Gunzip(io.RawIOBase):
    """A gzip stream of one or more members, decompressed as it is read. It hands out every
    byte before a cut, then raises `Cut` (gzip.GzipFile raises EOFError at once, losing the
    last block's whole records too, and warcio reads EOFError as a quiet end)."""

    def __init__(self, fh: BinaryIO):
        self._fh = fh
        self._d = zlib.decompressobj(31)
        self._in_member = False
        self._pending = b""
        self._buf = b""
        self._pos = 0  # bytes of _buf handed out (no copy of the rest per read)

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        while self._pos >= len(self._buf):
            if not self._pending:
                self._pending = self._fh.read(READ)
                if not self._pending:
                    if self._in_member:
                        raise Cut("the gzip stream ends inside a member (a cut file)")
                    return 0
            if not self._in_member:
                self._d = zlib.decompressobj(31)
                self._in_member = True
            self._buf, self._pos = self._d.decompress(self._pending, 1 << 20), 0
            self._pending = self._d.unconsumed_tail
            if self._d.eof:
                self._pending = self._d.unused_data
                self._in_member = False
        n = min(len(b), len(self._buf) - self._pos)
        b[:n] = self._buf[self._pos : self._pos + n]
        self._pos += n
        return n


ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def is_zstd(head: bytes) -> bool:
    """A zstd frame, or a skippable frame (ArchiveTeam's .warc.zst opens with its dictionary
    in one, magic 0x184D2A5D)."""
    return head == ZSTD_MAGIC or (
        len(head) == 4 and head[1:] == b"\x2a\x4d\x18" and head[0] >> 4 == 5
    )


class Unzstd:
    """A .warc.zst (the IIPC WARC-zstd layout: one frame per record, an optional dictionary in a
    leading skippable frame, itself zstd-compressed or raw) decompressed as it is read."""

    @staticmethod
    def open(fh: BinaryIO) -> BinaryIO:
        import struct

        import zstandard

        head = fh.read(8)
        dict_data = None
        rest = head
        if len(head) == 8 and head[:4] != ZSTD_MAGIC and is_zstd(head[:4]):
            size = struct.unpack("<I", head[4:8])[0]
            raw = fh.read(size)
            if raw.startswith(ZSTD_MAGIC):
                raw = zstandard.ZstdDecompressor().decompress(raw, max_output_size=64 << 20)
            dict_data = zstandard.ZstdCompressionDict(raw)
            rest = b""
        dctx = zstandard.ZstdDecompressor(dict_data=dict_data)
        return dctx.stream_reader(Prefixed(rest, fh), read_across_frames=True)  # type: ignore


def rewound(fh: BinaryIO) -> BinaryIO:
    fh.seek(0)
    return fh


class Prefixed(io.RawIOBase):
    """A non-seekable stream with the bytes already read put back in front."""

    def __init__(self, head: bytes, fh: BinaryIO):
        self._head, self._fh = head, fh

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._fh.read(len(b))
        b[: len(data)] = data
        return len(data)
