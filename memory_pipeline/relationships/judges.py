"""Which judge runs: Ollama when the semantic pass's model is reachable, else the offline rules.

The same settings as the semantic pass (MEMORY_SEMANTIC_MODEL, OLLAMA_HOST,
MEMORY_OLLAMA_TIMEOUT_S): one model serves both, through the same `llm` pool.
"""

from __future__ import annotations

from memory_pipeline.ollama_chat import ollama_model_available
from memory_pipeline.relationships.judge_offline import OfflineJudge
from memory_pipeline.relationships.judge_ollama import OllamaJudge
from memory_pipeline.relationships.models import Judge


def judge_for(ollama_host: str, model: str | None, timeout_s: float) -> Judge:
    if model and ollama_model_available(ollama_host, model, timeout_s=5):
        return OllamaJudge(ollama_host, model, timeout_s)
    return OfflineJudge()
