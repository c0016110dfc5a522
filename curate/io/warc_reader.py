"""The ``warc`` source: WARC files, their HTML responses turned into text with trafilatura."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from curate.core.registry import SOURCES
from curate.io.readers import read_errors
from curate.io.sources import BatchBuilder, Shard, Source, SourceError, SourceParams, quarantine_file
from curate.io.storage import open_input


@SOURCES.add("warc")
class WarcSource(Source):
    """WARC files: HTTP responses with HTML are turned into text with trafilatura.

    Responses whose extraction yields no text are counted as ``quarantine:no_text_extracted``; records
    that are not responses (requests, metadata, warcinfo) are not documents.
    """

    extensions = (".warc", ".warc.gz", ".arc.gz")

    def read(self, shard: Shard) -> Iterator[pa.Table]:
        import trafilatura
        from warcio.archiveiterator import ArchiveIterator

        p: SourceParams = self.params
        b = BatchBuilder(p)
        n = 0
        try:
            with open_input(shard.path) as f:
                for record in ArchiveIterator(f):
                    if record.rec_type != "response":
                        continue
                    if p.limit is not None and n >= p.limit:
                        break
                    n += 1
                    rid = record.rec_headers.get_header("WARC-Record-ID") or f"{shard.key}:{n}"
                    url = record.rec_headers.get_header("WARC-Target-URI")
                    ctype = (
                        record.http_headers.get_header("Content-Type") if record.http_headers else ""
                    ) or ""
                    raw = record.content_stream().read()
                    extra = {"url": url}
                    if "html" not in ctype.lower() and not raw.lstrip()[:15].lower().startswith(
                        (b"<!doctype", b"<html")
                    ):
                        b.add(
                            doc_id=rid,
                            text="",
                            source=shard.key,
                            extra=extra,
                            reject="not_html",
                            detail=f"content type {ctype or 'unknown'}",
                        )
                    else:
                        html = raw.decode("utf-8", "replace")
                        text = trafilatura.extract(html, include_comments=False, url=url) or ""
                        if text.strip():
                            b.add(doc_id=rid, text=text, source=shard.key, extra=extra)
                        else:
                            b.add(
                                doc_id=rid,
                                text="",
                                source=shard.key,
                                extra=extra,
                                reject="no_text_extracted",
                                detail="trafilatura found no main text",
                            )
                    if b.full():
                        yield b.flush()
        except read_errors() as e:
            if len(b):
                yield b.flush()
            if p.on_error != "quarantine" and n == 0:
                raise SourceError(f"{shard.path}: cannot read WARC: {e}") from e
            yield quarantine_file(shard, "truncated_file", f"{shard.path}: stopped after {n} records: {e}", p)
            return
        if len(b):
            yield b.flush()
