"""Where a catalog lives: every catalog read and write goes through this one filesystem layer
(``pyarrow.fs``), so that nothing assumes a local disk.

A catalog (and a source registered in place) is a directory that the client (here, through
``pyarrow.fs``) and Spark (its driver, its executors and a Spark Connect server, through
Hadoop's ``FileSystem``) both reach under the same name:

* a local path (``./.dltrace``, ``/shared/catalog``): made absolute on the client, symbolic
  links resolved, before anything reaches Spark, which would otherwise resolve a relative path
  against its own working directory (a Connect server's, an executor's); Spark gets the plain
  path, resolved against its default filesystem (``file:`` unless configured otherwise);
* ``file:///path``: the same local filesystem, named explicitly for Spark (a cluster whose
  default filesystem is HDFS); on a cluster it must be a mount every executor has (NFS);
* a Hadoop filesystem URI Spark can write: ``hdfs://namenode:port/path`` (pyarrow's
  ``HadoopFileSystem``: libhdfs, with ``JAVA_HOME``, ``HADOOP_HOME`` or ``ARROW_LIBHDFS_DIR``,
  and ``CLASSPATH`` from ``hadoop classpath --glob``), ``s3a://bucket/path`` (pyarrow's S3, the
  usual AWS credentials; Spark needs the ``hadoop-aws`` connector), ``gs://bucket/path``.

How writes stay atomic (docs/formats.md, "Atomic writes and recovery"): a file or directory
is written under a temporary name and renamed into place where the filesystem renames
atomically (``atomic_rename``: local disks; HDFS, whose rename of a file or a directory is one
NameNode operation; a file renamed over an existing one is a delete then a rename there,
since libhdfs has no overwriting rename, and a reader in that instant finds no file: readers
of metadata retry, ``read_text``).  Object stores (S3, GCS) have no rename: pyarrow moves a
file by copying it and cannot move a directory.  There a metadata file is written with one
upload, which the store publishes whole or not at all, and a directory of Parquet is written
at its final name, complete once Spark's committer has written its ``_SUCCESS`` marker
(``complete``), and only ever read once the metadata that names it is written.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import posixpath
import re
import time
from dataclasses import dataclass, replace

import pyarrow.fs as pafs

from dltrace.errors import BadInput, DltraceError

URI = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+)://")
# Hadoop's names for S3 -> pyarrow's: Spark writes s3a://, pyarrow reads the same objects as s3://
SCHEME_ALIASES = {"s3a": "s3", "s3n": "s3"}
RENAMING = frozenset({"local", "hdfs"})  # pyarrow filesystems whose rename is atomic
SUCCESS = "_SUCCESS"  # what Spark's output committer writes last into a directory it wrote
GLOB_CHARACTERS = frozenset("*?[")
RETRIES = 20  # reading a metadata file an HDFS writer is replacing: 20 x 50 ms


@dataclass(frozen=True)
class Location:
    """A file or directory: a pyarrow filesystem and a path in it, named for Spark as
    ``prefix + path``.  Its methods are the few pathlib ones the catalog uses, so that code
    reads as before; ``os.fspath`` works for local locations only."""

    fs: pafs.FileSystem
    path: str  # the filesystem's own path: "/abs/dir" (local, HDFS), "bucket/key" (object stores)
    prefix: str = ""  # "" (a local path, given to Spark as it is), "file://", "hdfs://nn:8020", "s3a://"

    def __str__(self) -> str:
        return self.prefix + self.path

    def __repr__(self) -> str:
        return f"Location({str(self)!r})"

    def __lt__(self, other: Location) -> bool:  # sorted() as pathlib's paths sort
        return self.path.split("/") < other.path.split("/")

    def __fspath__(self) -> str:
        if not self.local:
            raise TypeError(f"{self} is not on the local filesystem")
        return self.path

    def __truediv__(self, name: str | os.PathLike) -> Location:
        return replace(self, path=posixpath.join(self.path, os.fspath(name)))

    @property
    def name(self) -> str:
        return posixpath.basename(self.path.rstrip("/"))

    @property
    def stem(self) -> str:
        return posixpath.splitext(self.name)[0]

    @property
    def parent(self) -> Location:
        return replace(self, path=posixpath.dirname(self.path.rstrip("/")))

    @property
    def local(self) -> bool:
        return self.fs.type_name == "local"

    @property
    def atomic_rename(self) -> bool:
        """Whether a rename on this filesystem is atomic (local disks, HDFS), or it has none
        (object stores: pyarrow copies a file and cannot move a directory)."""
        return self.fs.type_name in RENAMING

    def relative_to(self, base: Location) -> str:
        return posixpath.relpath(self.path, base.path)

    def info(self) -> pafs.FileInfo:
        return self.fs.get_file_info(self.path)

    def exists(self) -> bool:
        return self.info().type != pafs.FileType.NotFound

    def is_dir(self) -> bool:
        return self.info().type == pafs.FileType.Directory

    def is_file(self) -> bool:
        return self.info().type == pafs.FileType.File

    def complete(self) -> bool:
        """Whether a directory Spark wrote here is all there: it exists, where it was renamed
        into place (``atomic_rename``); its ``_SUCCESS`` marker exists, elsewhere."""
        return self.exists() if self.atomic_rename else (self / SUCCESS).exists()

    def iterdir(self) -> list[Location]:
        """The entries of a directory, sorted by name; none when it does not exist."""
        found = self.fs.get_file_info(pafs.FileSelector(self.path, allow_not_found=True))
        return sorted((replace(self, path=i.path) for i in found), key=lambda loc: loc.name)

    def glob(self, pattern: str) -> list[Location]:
        """What a relative ``pattern`` matches below this directory, sorted: ``fnmatch`` per
        ``/``-separated segment; a name starting with ``.`` matches only a segment starting
        with ``.``, as in ``glob.glob``."""
        found = [self]
        for segment in pattern.strip("/").split("/"):
            if GLOB_CHARACTERS & set(segment):
                hidden = segment.startswith(".")
                found = [child for loc in found for child in loc.iterdir()
                         if fnmatch.fnmatchcase(child.name, segment) and (hidden or not child.name.startswith("."))]
            else:
                found = [loc / segment for loc in found if (loc / segment).exists()]
        return sorted(found, key=str)

    def files(self) -> list[pafs.FileInfo]:
        """Every file below a directory (recursively), or the file itself."""
        info = self.info()
        if info.type == pafs.FileType.File:
            return [info]
        selector = pafs.FileSelector(self.path, recursive=True, allow_not_found=True)
        return [i for i in self.fs.get_file_info(selector) if i.type == pafs.FileType.File]

    def size(self) -> int:
        """Bytes of a file, or of all files below a directory."""
        return sum(i.size for i in self.files())

    def open(self):
        """A seekable binary input file (what ``pyarrow.parquet.ParquetFile`` reads)."""
        return self.fs.open_input_file(self.path)

    def read_text(self) -> str:
        """The file's text.  A missing file is retried briefly while a writer's temporary file
        is beside it: on HDFS a replacing rename is a delete then a rename (module docstring)."""
        attempt = 0
        while True:
            try:
                with self.fs.open_input_stream(self.path) as stream:
                    return stream.read().decode()
            except FileNotFoundError:
                attempt += 1
                if self.local or attempt > RETRIES or not self.parent.glob(f".{self.stem}-*"):
                    raise
                time.sleep(0.05)

    def write_text(self, text: str) -> None:
        """Write the file (no temporary name: see ``write_atomically``)."""
        with self.fs.open_output_stream(self.path) as stream:
            stream.write(text.encode())

    def write_atomically(self, text: str, tmp_name: str) -> None:
        """Replace the file with ``text`` so that a reader sees the old or the new content:
        written as sibling ``tmp_name`` (carrying the writer's pid, for ``dltrace.recovery``)
        and renamed where renames are atomic; one upload, which an object store publishes
        whole, elsewhere."""
        self.parent.mkdir()
        if not self.atomic_rename:
            self.write_text(text)
            return
        tmp = self.parent / tmp_name
        try:
            tmp.write_text(text)
            tmp.rename(self)
        finally:
            tmp.unlink()

    def mkdir(self) -> None:
        """Create the directory and its parents (nothing to do on object stores)."""
        self.fs.create_dir(self.path, recursive=True)

    def rename(self, target: Location) -> None:
        """Move a file or directory to ``target`` (atomic where ``atomic_rename``)."""
        self.fs.move(self.path, target.path)

    def unlink(self) -> None:
        """Delete a file; nothing when it is not there."""
        try:
            self.fs.delete_file(self.path)
        except FileNotFoundError:
            pass

    def remove(self) -> None:
        """Delete a file or a directory with everything in it; nothing when it is not there."""
        kind = self.info().type
        try:
            if kind == pafs.FileType.Directory:
                self.fs.delete_dir(self.path)
            elif kind == pafs.FileType.File:
                self.fs.delete_file(self.path)
        except FileNotFoundError:
            pass


def location(where: str | os.PathLike | Location, what: str = "catalog") -> Location:
    """``where`` (a local path or a filesystem URI) as a ``Location``: a local path absolute,
    symbolic links resolved; a URI on the filesystem pyarrow has for its scheme.  ``what``
    names it in errors.

    >>> str(location("file:///tmp/x/../y"))
    'file:///tmp/y'
    >>> location("/tmp/y").prefix, location("/tmp/y").local
    ('', True)
    >>> location("nosuch://host/x")
    Traceback (most recent call last):
    dltrace.errors.BadInput: catalog nosuch://host/x: no filesystem for nosuch:// (use a local path, file://, hdfs://, s3a:// or gs://)
    """  # noqa: E501
    if isinstance(where, Location):
        return where
    text = os.fspath(where)
    match = URI.match(text)
    if not match:
        return Location(pafs.LocalFileSystem(), os.path.realpath(os.path.expanduser(text)))
    scheme = match.group(1).lower()
    authority, _, rest = text[len(match.group(0)):].partition("/")
    try:
        fs, root = _filesystem(f"{SCHEME_ALIASES.get(scheme, scheme)}://{authority}/")
    except (ValueError, NotImplementedError):  # pyarrow's ArrowInvalid is a ValueError
        raise BadInput(f"{what} {text}: no filesystem for {scheme}:// "
                       f"(use a local path, file://, hdfs://, s3a:// or gs://)") from None
    except OSError as error:
        first = next(iter(str(error).splitlines()), type(error).__name__)
        raise DltraceError(f"cannot open {what} {text}: {first} (see docs/formats.md, \"Where a catalog lives\")"
                           ) from None
    path = posixpath.join(root, rest) if rest else root
    if fs.type_name == "local":
        return Location(fs, os.path.realpath(path), "file://")
    # object stores' paths start with the bucket, HDFS's with "/" after host and port
    return Location(fs, path.rstrip("/") or "/", match.group(0) + ("" if root.startswith(authority) else authority))


@functools.cache
def _filesystem(root: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem of a URI's scheme and authority, once per process (an HDFS client
    connects to its NameNode, an S3 one looks up the bucket's region), and the root's path."""
    return pafs.FileSystem.from_uri(root)


def is_glob(where: str | os.PathLike | Location) -> bool:
    return bool(GLOB_CHARACTERS & set(str(where)))


def found(where: Location) -> bool:
    """Whether ``where`` names something: a file or directory, or a pattern matching one."""
    return where.exists() or (is_glob(where) and bool(glob(where)))


def glob(pattern: Location) -> list[Location]:
    """What a location with wildcards matches (``/data/events/*.parquet``), as ``glob.glob``."""
    parts = pattern.path.split("/")
    first = next(i for i, part in enumerate(parts) if GLOB_CHARACTERS & set(part))
    base = replace(pattern, path="/".join(parts[:first]) or "/")
    return base.glob("/".join(parts[first:]))
