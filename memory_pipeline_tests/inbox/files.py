"""Small inbox files made in tests: a PDF with a text layer (memory_pipeline/demo/pdf.py), one
without (a blank page), an encrypted one (pypdf's writer)."""

from __future__ import annotations

import io
from pathlib import Path

from memory_pipeline.demo.pdf import text_pdf


def image_only_pdf(pages: int = 2) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=595, height=842)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def encrypted_pdf(text: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf([text]))))
    writer.encrypt(user_password="secret-pw", owner_password="owner-pw")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def write(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)
    return path
