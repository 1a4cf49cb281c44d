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
        self._window: int | None = None

    @property
    def window_tokens(self) -> int:
        """The model's context length as the server reports it (`<arch>.context_length`)."""
        if self._window is None:
            try:
                info = self._client.show(self.model).modelinfo or {}
            except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
                raise self._unavailable(exc) from exc
            arch = info.get("general.architecture")
            length = info.get(f"{arch}.context_length") if arch else None
            self._window = int(length) if length else tuning.OLLAMA_UNKNOWN_WINDOW_TOKENS
        return self._window

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """An estimate (no local tokenizer): characters / OLLAMA_CHARS_PER_TOKEN_ESTIMATE."""
        per = tuning.OLLAMA_CHARS_PER_TOKEN_ESTIMATE
        return [-(-len(text) // per) for text in texts]

    def _unavailable(self, exc: Exception) -> UserError:
        return UserError(
            f"Ollama at {self.host} could not embed with {self.model} ({exc}); start Ollama "
            f"and `ollama pull {self.model}`, or set MEMORY_EMBEDDING_SPACE back to "
            f"{tuning.LOCAL_EMBEDDING_SPACE}"
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        try:
            response = self._client.embed(model=self.model, input=list(texts))
        except (ollama.ResponseError, ConnectionError, httpx.HTTPError) as exc:
            raise self._unavailable(exc) from exc
        vectors = np.asarray(response.embeddings, dtype=np.float32)
        if vectors.shape != (len(texts), self.dims):
            raise UserError(
                f"{self.model} returned vectors of shape {vectors.shape}, expected "
                f"({len(texts)}, {self.dims}); the space name must match the model"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1, norms)
