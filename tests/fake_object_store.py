"""A fake object store on 127.0.0.1 and the Beam filesystem that reaches it,
to count what reading a run costs in requests, as gs:// or s3:// would.

    with ObjectStore(folder) as store:       # serves `folder`'s files as objects
        url = store.url                       # objs://127.0.0.1:PORT
        ... read the run at url ...
        store.counts()                        # {"HEAD": n, "GET": n, "LIST": n, ...}

The server answers HEAD (an object's size), GET with a Range (bytes a-b, or
the whole object), LIST (the objects under a prefix, their sizes), PUT,
DELETE and COPY, over real HTTP, and counts each request by kind.

ObjectStoreFileSystem (scheme objs://, `objs://HOST:PORT/key`) is made as
Beam's own S3 and GCS filesystems are (apache_beam/io/aws/s3io.py): `exists`,
`size` and `metadata` ask HEAD; `open` asks HEAD for the size, then reads
through Beam's own DownloaderStream in a 16 MiB io.BufferedReader, each read
outside what it holds one ranged GET; `match` lists the prefix (LIST). So a
reader here makes the requests it would make of s3:// or gs://.
"""
from __future__ import annotations

import collections
import io
import json
import os
import threading
import urllib.parse
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from apache_beam.io.filesystem import BeamIOError, FileMetadata, FileSystem
from apache_beam.io.filesystemio import Downloader, DownloaderStream

READ_BUFFER = 16 * 1024 * 1024  # Beam's s3io and gcsio read buffer


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def _file(self) -> str:
        key = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path.lstrip("/"))
        if ".." in key.split("/"):
            raise ValueError(key)
        return os.path.join(self.server.root, *key.split("/"))

    def _count(self, kind: str) -> None:
        with self.server.lock:
            self.server.requests[kind] += 1

    def _reply(self, status: int, body: bytes = b"", headers: dict | None = None,
               send_body: bool = True) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, str(v))
        self.send_header("Content-Length", str(len(body)) if send_body else
                         str((headers or {}).get("X-Size", len(body))))
        self.end_headers()
        if send_body and body:
            self.wfile.write(body)
            with self.server.lock:
                self.server.requests["bytes"] += len(body)

    def do_HEAD(self):
        self._count("HEAD")
        path = self._file()
        if not os.path.isfile(path):
            return self._reply(404, send_body=False)
        st = os.stat(path)
        self._reply(200, headers={"X-Size": st.st_size, "X-Mtime": st.st_mtime},
                    send_body=False)

    def do_GET(self):
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
        if "list" in query:
            self._count("LIST")
            prefix = query.get("prefix", [""])[0]
            found = []
            for folder, _, names in os.walk(self.server.root):
                for name in names:
                    full = os.path.join(folder, name)
                    key = os.path.relpath(full, self.server.root).replace(os.sep, "/")
                    if key.startswith(prefix):
                        st = os.stat(full)
                        found.append([key, st.st_size, st.st_mtime])
            return self._reply(200, json.dumps(sorted(found)).encode())
        self._count("GET")
        path = self._file()
        if not os.path.isfile(path):
            return self._reply(404)
        size = os.path.getsize(path)
        start, end = 0, size
        ranged = self.headers.get("Range")
        if ranged:
            first, _, last = ranged.partition("=")[2].partition("-")
            start, end = int(first), min(int(last) + 1, size)
        with open(path, "rb") as fh:
            fh.seek(start)
            data = fh.read(max(0, end - start))
        self._reply(206 if ranged else 200, data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_PUT(self):
        source = self.headers.get("X-Copy-Source")
        self._count("COPY" if source else "PUT")
        path = self._file()
        data = self._body()
        if source:
            src = os.path.join(self.server.root, *source.split("/"))
            if not os.path.isfile(src):
                return self._reply(404)
            with open(src, "rb") as fh:
                data = fh.read()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + ".upload", "wb") as fh:
            fh.write(data)
        os.replace(path + ".upload", path)
        self._reply(200)

    def do_DELETE(self):
        self._count("DELETE")
        path = self._file()
        if os.path.isfile(path):
            os.remove(path)
        self._reply(204)


class ObjectStore:
    """The server, serving `root`'s files as objects, in a thread."""

    def __init__(self, root: str):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.daemon_threads = True
        self.httpd.root = os.path.abspath(root)
        self.httpd.lock = threading.Lock()
        self.httpd.requests = collections.Counter()
        self.url = f"objs://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "ObjectStore":
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def counts(self) -> dict[str, int]:
        """The requests received so far, by kind (and the body bytes sent)."""
        with self.httpd.lock:
            return dict(self.httpd.requests)

    def reset(self) -> None:
        with self.httpd.lock:
            self.httpd.requests.clear()


def _split(url: str) -> tuple[str, str]:
    """objs://HOST:PORT/key -> (HOST:PORT, key)."""
    host, _, key = url[len("objs://"):].partition("/")
    return host, key


def _request(url: str, method: str, headers: dict | None = None, body: bytes | None = None,
             query: str = ""):
    host, key = _split(url)
    conn = HTTPConnection(host, timeout=60)
    try:
        conn.request(method, "/" + urllib.parse.quote(key) + query, body=body,
                     headers=headers or {})
        reply = conn.getresponse()
        return reply.status, dict(reply.getheaders()), reply.read()
    finally:
        conn.close()


def _head(url: str) -> tuple[int, float] | None:
    status, headers, _ = _request(url, "HEAD")
    return (int(headers["X-Size"]), float(headers["X-Mtime"])) if status == 200 else None


class _Download(Downloader):
    """One object, read by ranged GETs (its size from a HEAD, as S3Downloader)."""

    def __init__(self, url: str):
        self.url = url
        found = _head(url)
        if found is None:
            raise FileNotFoundError(f"Not found: {url}")
        self._size = found[0]

    @property
    def size(self):
        return self._size

    def get_range(self, start, end):
        status, _, data = _request(self.url, "GET", {"Range": f"bytes={start}-{end - 1}"})
        if status not in (200, 206):
            raise OSError(f"GET {self.url}: {status}")
        return data


class _Upload(io.BytesIO):
    def __init__(self, url: str):
        super().__init__()
        self.url = url

    def close(self):
        if not self.closed:
            _request(self.url, "PUT", body=self.getvalue())
        super().close()


class ObjectStoreFileSystem(FileSystem):
    """Beam's view of the fake object store (scheme objs://), made as Beam's S3
    filesystem is."""

    CHUNK_SIZE = 1000

    @classmethod
    def scheme(cls):
        return "objs"

    def join(self, basepath, *paths):
        return "/".join([basepath.rstrip("/"), *[p.strip("/") for p in paths]])

    def split(self, path):
        head, _, tail = path.rpartition("/")
        return head, tail

    def has_dirs(self):
        return False

    def mkdirs(self, path):
        pass

    def _list(self, dir_or_prefix):
        host, key = _split(dir_or_prefix)
        status, _, body = _request(f"objs://{host}/", "GET",
                                   query="?list=1&prefix=" + urllib.parse.quote(key))
        for name, size, mtime in json.loads(body):
            yield FileMetadata(f"objs://{host}/{name}", size, mtime)

    def create(self, path, mime_type="application/octet-stream", compression_type=None):
        return _Upload(path)

    def open(self, path, mime_type="application/octet-stream", compression_type=None):
        return io.BufferedReader(DownloaderStream(_Download(path), mode="rb"),
                                 buffer_size=READ_BUFFER)

    def copy(self, source_file_names, destination_file_names):
        for src, dst in zip(source_file_names, destination_file_names):
            _request(dst, "PUT", {"X-Copy-Source": _split(src)[1]})

    def rename(self, source_file_names, destination_file_names):
        self.copy(source_file_names, destination_file_names)
        self.delete(source_file_names)

    def exists(self, path):
        return _head(path) is not None

    def _stat(self, path):
        found = _head(path)
        if found is None:
            raise BeamIOError("Not found", {path: FileNotFoundError(path)})
        return found

    def size(self, path):
        return self._stat(path)[0]

    def last_updated(self, path):
        return self._stat(path)[1]

    def checksum(self, path):
        return str(self._stat(path))

    def metadata(self, path):
        size, mtime = self._stat(path)
        return FileMetadata(path, size, mtime)

    def delete(self, paths):
        for path in paths:
            _request(path, "DELETE")


__all__ = ["ObjectStore", "ObjectStoreFileSystem"]
