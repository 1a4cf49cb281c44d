"""bge-m3 (or another embedding model) through a local Ollama server, via the `ollama` client."""

from __future__ import annotations

from collections.abc import Sequence

import httpx
import numpy as np
import ollama

from memory_pipeline import tuning
from memory_pipeline.embedding.embedder import space_dims
from memory_pipeline.errors import UserError


class OllamaEmbedder:
    def __init__(self, host: str, space: str, timeout_s: float = 120.0) -> None:
        provider, model, _ = space.split(":", 2)
        if provider != "ollama":
            raise ValueError(f"{space} is not an Ollama space")
        self.space = space
        self.model = model
        self.dims = space_dims(space)
        self.host = host
        self._client = ollama.Client(host=host, timeout=timeout_s)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        try:
            response = self._client.embed(model=self.model, input=list(texts))
        except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
            raise UserError(
                f"Ollama at {self.host} could not embed with {self.model} ({exc}); start Ollama "
                f"and `ollama pull {self.model}`, or set MEMORY_EMBEDDING_SPACE back to "
                f"{tuning.LOCAL_EMBEDDING_SPACE}"
            ) from exc
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.shape != (len(texts), self.dims):
            raise UserError(
                f"{self.model} returned vectors of shape {vectors.shape}, expected "
                f"({len(texts)}, {self.dims}); the space name must match the model"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)
