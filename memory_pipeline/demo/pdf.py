"""A PDF with a text layer, written by hand in PDF 1.4 syntax (Helvetica, one line each 14 pt
apart): the demo's PDF document and the inbox tests' PDFs. Deterministic (no dates, no ids)."""

from __future__ import annotations

import io


def text_pdf(pages: list[str], title: str = "", created: str = "") -> bytes:
    """A PDF whose pages hold `pages` as text (Helvetica, one line each 14 pt apart)."""
    objects: list[bytes] = []
    n_pages = len(pages)
    font_id = 3 + 2 * n_pages
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(n_pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {n_pages} >>".encode())
    for i, text in enumerate(pages):
        lines = [
            ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            for ln in text.splitlines()
        ]
        ops = "BT /F1 11 Tf 14 TL 50 780 Td " + " ".join(f"({ln}) Tj T*" for ln in lines) + " ET"
        stream = ops.encode("latin-1")
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents {4 + 2 * i} 0 R"
            f" /Resources << /Font << /F1 {font_id} 0 R >> >> >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    info_id = len(objects) + 1
    date = f" /CreationDate (D:{created.replace('-', '')}000000Z)" if created else ""
    objects.append(f"<< /Title ({title}){date} >>".encode())
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(
        b"trailer\n<< /Size %d /Root 1 0 R /Info %d 0 R >>\nstartxref\n%d\n%%%%EOF\n"
        % (len(objects) + 1, info_id, xref)
    )
    return out.getvalue()
